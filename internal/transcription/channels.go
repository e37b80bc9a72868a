package transcription

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Speakers of a two-channel recording; a mono recording's segments keep the engine's label.
const (
	SpeakerCaller = "caller"
	SpeakerAgent  = "agent"
)

// ChannelSpeakers gives speakers to two-channel recordings: platforms that record the caller
// and the answering side on separate channels (the caller on the first, as is usual) get
// each channel transcribed on its own and the segments labelled caller and agent, in time
// order. Recordings of one channel, or more than two, go to the engine as they are (a mono
// recording cannot tell the speakers apart: every segment is "speaker"). sox reads and splits
// the audio.
type ChannelSpeakers struct {
	Engine SpeechToText
	// Sox is the sox binary (default: sox on PATH).
	Sox string
}

func (c ChannelSpeakers) sox() string {
	if c.Sox != "" {
		return c.Sox
	}
	return "sox"
}

// Available reports whether the engine's local programs are installed (true for an engine
// that has none to check).
func (c ChannelSpeakers) Available() bool {
	if e, ok := c.Engine.(interface{ Available() bool }); ok && !e.Available() {
		return false
	}
	_, err := exec.LookPath(c.sox())
	return err == nil
}

// Transcribe splits a two-channel recording and transcribes each channel.
func (c ChannelSpeakers) Transcribe(ctx context.Context, a Audio) (Speech, error) {
	data, err := io.ReadAll(a.Data)
	if err != nil {
		return Speech{}, fmt.Errorf("read the audio: %w", err)
	}
	whole := func() (Speech, error) {
		return c.Engine.Transcribe(ctx, Audio{Data: bytes.NewReader(data), Filename: a.Filename, ContentType: a.ContentType})
	}
	dir, err := os.MkdirTemp("", "switchboard-channels-")
	if err != nil {
		return Speech{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	in := filepath.Join(dir, "in"+audioExt(a.Filename))
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return Speech{}, err
	}
	if in, err = soxReadable(ctx, in, dir); err != nil {
		return Speech{}, err
	}
	out, err := exec.CommandContext(ctx, c.sox(), "--i", "-c", in).Output()
	if err != nil {
		if ctx.Err() != nil {
			return Speech{}, ctx.Err()
		}
		return whole() // not for sox to judge: the engine says whether it can read the audio
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n != 2 {
		return whole()
	}
	var all Speech
	for i, speaker := range []string{SpeakerCaller, SpeakerAgent} {
		mono := filepath.Join(dir, speaker+".wav")
		var stderr bytes.Buffer
		split := exec.CommandContext(ctx, c.sox(), "-q", "-V1", "-D", in, "-b", "16", "-e", "signed-integer", mono, "remix", strconv.Itoa(i+1))
		split.Stderr = &stderr
		if err := split.Run(); err != nil {
			if ctx.Err() != nil {
				return Speech{}, ctx.Err()
			}
			return Speech{}, Permanent(fmt.Errorf("split channel %d: %s", i+1, strings.TrimSpace(stderr.String())))
		}
		f, err := os.Open(mono)
		if err != nil {
			return Speech{}, err
		}
		sp, err := c.Engine.Transcribe(ctx, Audio{Data: f, Filename: speaker + ".wav", ContentType: "audio/wav"})
		_ = f.Close()
		if err != nil {
			return Speech{}, err
		}
		if all.Language == "" {
			all.Language = sp.Language
		}
		for _, sg := range sp.Segments {
			sg.Speaker = speaker
			all.Segments = append(all.Segments, sg)
		}
	}
	return mergeChannels(all), nil
}

// mergeChannels puts the segments of both channels in time order (the caller first on a tie)
// and makes the text from them.
func mergeChannels(s Speech) Speech {
	slices.SortStableFunc(s.Segments, func(a, b Segment) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	if s.Segments == nil {
		s.Segments = []Segment{}
	}
	texts := make([]string, 0, len(s.Segments))
	for _, sg := range s.Segments {
		texts = append(texts, sg.Text)
	}
	s.Text = strings.Join(texts, " ")
	return s
}

// audioExt is the file extension sox needs to read a recording of that name (.wav when it has none).
func audioExt(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == "" || len(ext) > 6 {
		return ".wav"
	}
	return ext
}
