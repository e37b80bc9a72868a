package transcription

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// PocketSphinx is the local speech-to-text engine of the default set-up: CMU PocketSphinx
// (pocketsphinx_continuous from the Debian package pocketsphinx, with the US English model of
// pocketsphinx-en-us), after sox has resampled the recording to the 16 kHz mono 16-bit WAV it
// reads (WAV in PCM, mu-law or a-law, MP3, and Ogg Opus through opusdec). It needs no network and is fast (about 2 s for 10 s of audio on one core), but its
// accuracy on telephone and synthesized speech is poor: use the OpenAI-compatible engine
// (a hosted service or a self-hosted Whisper server) for transcripts people will read.
// hack/install-speech-tools.sh installs the packages.
type PocketSphinx struct {
	// Binary is pocketsphinx_continuous (default: found on PATH).
	Binary string
	// Sox converts the audio (default: sox on PATH).
	Sox string
	// ModelDir, when set, holds en-us/ (acoustic model), en-us.lm.bin and cmudict-en-us.dict;
	// unset, the binary's built-in default model is used.
	ModelDir string
}

// Available reports whether the binaries are installed.
func (p PocketSphinx) Available() bool {
	_, err1 := exec.LookPath(p.binary())
	_, err2 := exec.LookPath(p.sox())
	return err1 == nil && err2 == nil
}

func (p PocketSphinx) binary() string {
	if p.Binary != "" {
		return p.Binary
	}
	return "pocketsphinx_continuous"
}

func (p PocketSphinx) sox() string {
	if p.Sox != "" {
		return p.Sox
	}
	return "sox"
}

// Transcribe converts the audio and decodes it.
func (p PocketSphinx) Transcribe(ctx context.Context, a Audio) (Speech, error) {
	dir, err := os.MkdirTemp("", "switchboard-stt-")
	if err != nil {
		return Speech{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	wav, err := wav16kMono(ctx, p.sox(), a, dir)
	if err != nil {
		return Speech{}, err
	}
	args := []string{"-infile", wav, "-time", "yes", "-logfn", os.DevNull}
	if p.ModelDir != "" {
		args = append(args, "-hmm", filepath.Join(p.ModelDir, "en-us"), "-lm", filepath.Join(p.ModelDir, "en-us.lm.bin"),
			"-dict", filepath.Join(p.ModelDir, "cmudict-en-us.dict"))
	}
	var out, stderr bytes.Buffer
	dec := exec.CommandContext(ctx, p.binary(), args...)
	dec.Stdout, dec.Stderr = &out, &stderr
	if err := dec.Run(); err != nil {
		if ctx.Err() != nil {
			return Speech{}, ctx.Err()
		}
		return Speech{}, fmt.Errorf("run %s: %w: %s", p.binary(), err, strings.TrimSpace(stderr.String()))
	}
	return parsePocketSphinx(out.String()), nil
}

// parsePocketSphinx reads pocketsphinx_continuous -time yes output: for each utterance a line
// of its text, then one line per word ("word start end probability"), bracketed by <s> and
// </s>. Each utterance becomes a segment; fillers (<sil>, [NOISE], ...) are dropped and
// alternative pronunciations ("read(2)") lose their marker.
func parsePocketSphinx(out string) Speech {
	s := Speech{Language: "en", Segments: []Segment{}}
	var words []string
	start, end := -1.0, 0.0
	flush := func() {
		if len(words) > 0 {
			s.Segments = append(s.Segments, Segment{Start: start, End: end, Speaker: "speaker", Text: strings.Join(words, " ")})
		}
		words, start, end = nil, -1, 0
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue // an utterance's text line: its words follow with times
		}
		b, err1 := strconv.ParseFloat(f[1], 64)
		e, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		w := f[0]
		switch {
		case w == "<s>":
			flush()
			continue
		case w == "</s>":
			flush()
			continue
		case strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "++"):
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		if start < 0 {
			start = b
		}
		end = e
		words = append(words, w)
	}
	flush()
	texts := make([]string, len(s.Segments))
	for i, sg := range s.Segments {
		texts[i] = sg.Text
	}
	s.Text = strings.Join(texts, " ")
	return s
}
