package speechsynth

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Turn is what one side of a call says.
type Turn struct {
	// Agent is the business's side (the second channel); otherwise the caller (the first).
	Agent bool
	Voice Voice
	Text  string
}

// Span is where a turn is in a recording, in seconds from its start.
type Span struct{ Start, End float64 }

const telephoneRate = 8000

// Conversation says the turns one after another, pause seconds apart and after pause seconds
// of silence, as a telephone recording (8 kHz mu-law, 300–3400 Hz): two channels, the caller
// on the first and the agent on the second, as call recorders keep them, or one channel when
// only the caller speaks (a voicemail). The recording is padded with silence to a whole number
// of seconds, so its length is exactly the seconds a call row reports. It returns the
// recording and where each turn is in it.
func Conversation(ctx context.Context, turns []Turn, pause float64) ([]byte, []Span, error) {
	if len(turns) == 0 {
		return nil, nil, errors.New("no turns")
	}
	speech := make([][]int16, len(turns))
	lengths := make([]int, len(turns))
	stereo := false
	for i, t := range turns {
		wav, err := Speak(ctx, t.Text, t.Voice, telephonePCM)
		if err != nil {
			return nil, nil, fmt.Errorf("turn %d: %w", i, err)
		}
		if speech[i], err = pcmSamples(wav); err != nil {
			return nil, nil, fmt.Errorf("turn %d: %w", i, err)
		}
		lengths[i] = len(speech[i])
		stereo = stereo || t.Agent
	}
	starts, total := layout(lengths, int(pause*telephoneRate), telephoneRate)
	channels := 1
	if stereo {
		channels = 2
	}
	samples := make([]int16, total*channels)
	spans := make([]Span, len(turns))
	for i, t := range turns {
		ch := 0
		if t.Agent && stereo {
			ch = 1
		}
		for j, v := range speech[i] {
			samples[(starts[i]+j)*channels+ch] = v
		}
		spans[i] = Span{Start: float64(starts[i]) / telephoneRate, End: float64(starts[i]+lengths[i]) / telephoneRate}
	}
	var pcm bytes.Buffer
	writePCMHeader(&pcm, channels, len(samples))
	_ = binary.Write(&pcm, binary.LittleEndian, samples)
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "sox", "-q", "-V1", "-D", "-t", "wav", "-", "-t", "wav", "-e", "mu-law", "-")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &pcm, &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("sox: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return fixSizes(out.Bytes()), spans, nil
}

// layout places turns of the given lengths (in samples) one after another, each after a
// pause, and returns where each starts and the total length, rounded up to whole seconds of
// rate samples.
func layout(lengths []int, pause, rate int) (starts []int, total int) {
	at := 0
	for _, n := range lengths {
		at += pause
		starts = append(starts, at)
		at += n
	}
	return starts, (at + rate - 1) / rate * rate
}

// pcmSamples returns a 16-bit mono PCM WAV's samples.
func pcmSamples(wav []byte) ([]int16, error) {
	if len(wav) < 12 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" {
		return nil, errors.New("not a WAV file")
	}
	for i := 12; i+8 <= len(wav); {
		id, size := string(wav[i:i+4]), int(binary.LittleEndian.Uint32(wav[i+4:i+8]))
		if id == "data" {
			data := wav[i+8 : min(i+8+size, len(wav))]
			out := make([]int16, len(data)/2)
			_ = binary.Read(bytes.NewReader(data[:len(out)*2]), binary.LittleEndian, out)
			return out, nil
		}
		i += 8 + size + size%2
	}
	return nil, errors.New("WAV without data")
}

func writePCMHeader(b *bytes.Buffer, channels, samples int) {
	w := func(v any) { _ = binary.Write(b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + samples*2))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(channels))
	w(uint32(telephoneRate))
	w(uint32(telephoneRate * 2 * channels))
	w(uint16(2 * channels))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(samples * 2))
}
