// Package speechsynth speaks scripts to audio with Festival or espeak-ng and turns it into
// the formats calls arrive in (sox does every conversion): the demo's recordings and the
// speech-to-text benchmark's test set are made with it. hack/install-speech-tools.sh installs
// the tools and Festival's voices.
package speechsynth

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Voice is a Festival voice, or an espeak-ng voice and speaking rate.
type Voice struct {
	// Festival is a Festival voice, e.g. "cmu_us_slt_arctic_hts"; when it is set and
	// installed (FestivalAvailable) Festival speaks, otherwise espeak-ng with Name.
	Festival string
	// Name is an espeak-ng voice, e.g. "en-gb", "en-us", "en-gb-scotland" (default en-gb).
	Name string
	// WordsPerMinute is espeak-ng's rate (its default is 175).
	WordsPerMinute int
}

// Festival voices in Debian: the HTS (statistical parametric) voice sounds far more like a
// person than a diphone or formant voice, and a small recognizer trained on people reads it
// far better. Debian has one English HTS voice, so a second speaker is a diphone voice.
const (
	// FestivalHTSFemale is Debian's festvox-us-slt-hts (US English, female, HTS).
	FestivalHTSFemale = "cmu_us_slt_arctic_hts"
	// FestivalDiphoneMale is Debian's festvox-kallpc16k (US English, male, diphone).
	FestivalDiphoneMale = "kal_diphone"
)

var festivalVoiceName = regexp.MustCompile(`^[a-z0-9_]+$`)

// FestivalAvailable reports whether Festival's text2wave, sox and the voice are installed.
func FestivalAvailable(voice string) bool {
	if !festivalVoiceName.MatchString(voice) {
		return false
	}
	_, err1 := exec.LookPath("text2wave")
	_, err2 := exec.LookPath("sox")
	dirs, _ := filepath.Glob(filepath.Join("/usr/share/festival/voices", "*", voice))
	return err1 == nil && err2 == nil && len(dirs) > 0
}

// UsesFestival reports whether Speak says text in v with Festival (else espeak-ng).
func UsesFestival(v Voice) bool { return v.Festival != "" && FestivalAvailable(v.Festival) }

// Format is an output format.
type Format int

const (
	// Wideband is 16 kHz mono 16-bit PCM WAV.
	Wideband Format = iota
	// Telephone is 8 kHz mono mu-law WAV band-limited to 300–3400 Hz, as a phone line carries it.
	Telephone
	// TelephoneALaw is Telephone with a-law instead of mu-law.
	TelephoneALaw
	// telephonePCM is Telephone as 16-bit PCM, for mixing before encoding.
	telephonePCM
)

// Available reports whether espeak-ng and sox are installed (what Speak needs at least).
func Available() bool {
	_, err1 := exec.LookPath("espeak-ng")
	_, err2 := exec.LookPath("sox")
	return err1 == nil && err2 == nil
}

// Speak says text in voice v and returns it in format f: with Festival when v names an
// installed Festival voice, else with espeak-ng.
func Speak(ctx context.Context, text string, v Voice, f Format) ([]byte, error) {
	if UsesFestival(v) {
		wav, err := festival(ctx, text, v.Festival)
		if err != nil {
			return nil, err
		}
		return Convert(ctx, wav, f)
	}
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

// festival says text with text2wave in voice, as a WAV at the voice's own rate.
func festival(ctx context.Context, text, voice string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "switchboard-festival-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.wav")
	if err := os.WriteFile(in, []byte(strings.Join(strings.Fields(text), " ")+"\n"), 0o600); err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "text2wave", "-eval", "(voice_"+voice+")", "-o", out, in)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("text2wave (%s): %w: %s", voice, err, strings.TrimSpace(stderr.String()))
	}
	return os.ReadFile(out)
}

// Convert turns a WAV file into format f (no dither, so the same input always gives
// the same bytes).
func Convert(ctx context.Context, audio []byte, f Format) ([]byte, error) {
	var out []string
	switch f {
	case Wideband:
		out = []string{"-t", "wav", "-c", "1", "-b", "16", "-e", "signed-integer", "-", "rate", "16000"}
	case Telephone, TelephoneALaw, telephonePCM:
		enc := []string{"-e", "mu-law"}
		switch f {
		case TelephoneALaw:
			enc = []string{"-e", "a-law"}
		case telephonePCM:
			enc = []string{"-b", "16", "-e", "signed-integer"}
		}
		out = append(append([]string{"-t", "wav", "-c", "1"}, enc...), "-", "sinc", "300-3400", "rate", "8000")
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
