// Package speechsynth speaks scripts to audio with espeak-ng and turns it into the formats
// calls arrive in (sox does every conversion): the demo's recordings and the speech-to-text
// benchmark's test set are made with it. hack/install-speech-tools.sh installs both tools.
package speechsynth

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Voice is an espeak-ng voice and speaking rate.
type Voice struct {
	// Name is an espeak-ng voice, e.g. "en-gb", "en-us", "en-gb-scotland" (default en-gb).
	Name string
	// WordsPerMinute is the rate (espeak-ng's default is 175).
	WordsPerMinute int
}

// Format is an output format.
type Format int

const (
	// Wideband is 16 kHz mono 16-bit PCM WAV.
	Wideband Format = iota
	// Telephone is 8 kHz mono mu-law WAV band-limited to 300–3400 Hz, as a phone line carries it.
	Telephone
	// TelephoneALaw is Telephone with a-law instead of mu-law.
	TelephoneALaw
)

// Available reports whether espeak-ng and sox are installed.
func Available() bool {
	_, err1 := exec.LookPath("espeak-ng")
	_, err2 := exec.LookPath("sox")
	return err1 == nil && err2 == nil
}

// Speak says text in voice v and returns it in format f.
func Speak(ctx context.Context, text string, v Voice, f Format) ([]byte, error) {
	name := v.Name
	if name == "" {
		name = "en-gb"
	}
	args := []string{"--stdout", "-v", name}
	if v.WordsPerMinute > 0 {
		args = append(args, "-s", strconv.Itoa(v.WordsPerMinute))
	}
	args = append(args, strings.Join(strings.Fields(text), " "))
	var wav, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "espeak-ng", args...)
	cmd.Stdout, cmd.Stderr = &wav, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("espeak-ng: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return Convert(ctx, wav.Bytes(), f)
}

// Convert turns a WAV file into format f (no dither, so the same input always gives
// the same bytes).
func Convert(ctx context.Context, audio []byte, f Format) ([]byte, error) {
	var out []string
	switch f {
	case Wideband:
		out = []string{"-t", "wav", "-c", "1", "-b", "16", "-e", "signed-integer", "-", "rate", "16000"}
	case Telephone, TelephoneALaw:
		enc := "mu-law"
		if f == TelephoneALaw {
			enc = "a-law"
		}
		out = []string{"-t", "wav", "-c", "1", "-e", enc, "-", "sinc", "300-3400", "rate", "8000"}
	default:
		return nil, fmt.Errorf("unknown format %d", f)
	}
	var wav, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "sox", append([]string{"-q", "-V1", "-D", "-t", "wav", "-"}, out...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(audio), &wav, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sox: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return fixSizes(wav.Bytes()), nil
}

// fixSizes writes the RIFF and data chunk sizes that sox leaves unset when it writes to a pipe.
func fixSizes(wav []byte) []byte {
	if len(wav) < 12 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" {
		return wav
	}
	binary.LittleEndian.PutUint32(wav[4:8], uint32(len(wav)-8))
	for i := 12; i+8 <= len(wav); {
		id, size := string(wav[i:i+4]), int(binary.LittleEndian.Uint32(wav[i+4:i+8]))
		if id == "data" {
			binary.LittleEndian.PutUint32(wav[i+4:i+8], uint32(len(wav)-i-8))
			break
		}
		i += 8 + size + size%2
	}
	return wav
}

// Seconds is the length of a PCM, mu-law or a-law WAV.
func Seconds(wav []byte) (float64, error) {
	if len(wav) < 12 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" {
		return 0, errors.New("not a WAV file")
	}
	var byteRate uint32
	for i := 12; i+8 <= len(wav); {
		id, size := string(wav[i:i+4]), int(binary.LittleEndian.Uint32(wav[i+4:i+8]))
		switch id {
		case "fmt ":
			if i+16 <= len(wav) {
				byteRate = binary.LittleEndian.Uint32(wav[i+16 : i+20])
			}
		case "data":
			if byteRate == 0 {
				return 0, errors.New("WAV data before its format")
			}
			return float64(min(size, len(wav)-i-8)) / float64(byteRate), nil
		}
		i += 8 + size + size%2
	}
	return 0, errors.New("WAV without data")
}
