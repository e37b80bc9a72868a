package transcription

import (
	"bytes"
	"context"
	_ "embed" // the decoding script
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// VoskVersion is the Vosk release hack/install-vosk.sh installs (the vosk wheel from PyPI and
// the small US English model Alpha Cephei publish on Maven Central).
const VoskVersion = "0.3.45"

//go:embed vosk_decode.py
var voskDecodeScript string

// Vosk is the local engine built on Vosk (Alpha Cephei's Kaldi recogniser, Apache-2.0) with
// its small US English model. Each job runs a Python child process (the venv made by
// hack/install-vosk.sh, loading the wheel's libvosk.so) on the 16 kHz mono WAV sox makes, as
// PocketSphinx does: the service binary stays static (no cgo) and a crash in the recogniser
// fails one job, not the process. Loading the model takes about a second per job.
type Vosk struct {
	// Python is the venv's interpreter (default: VoskDir()/venv/bin/python).
	Python string
	// ModelDir holds am/, conf/, graph/ and ivector/ (default: VoskDir()/model).
	ModelDir string
	// Sox converts the audio (default: sox on PATH).
	Sox string
}

// VoskDir is where hack/install-vosk.sh installs Vosk: $SWITCHBOARD_CACHE (default
// $XDG_CACHE_HOME/switchboard or ~/.cache/switchboard) /vosk/<version>.
func VoskDir() string {
	cache := os.Getenv("SWITCHBOARD_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "switchboard")
	}
	return filepath.Join(cache, "vosk", VoskVersion)
}

func (v Vosk) python() string {
	if v.Python != "" {
		return v.Python
	}
	return filepath.Join(VoskDir(), "venv", "bin", "python")
}

func (v Vosk) modelDir() string {
	if v.ModelDir != "" {
		return v.ModelDir
	}
	return filepath.Join(VoskDir(), "model")
}

func (v Vosk) sox() string {
	if v.Sox != "" {
		return v.Sox
	}
	return "sox"
}

// Available reports whether the interpreter, the model and sox are installed.
func (v Vosk) Available() bool {
	_, err1 := exec.LookPath(v.python())
	_, err2 := os.Stat(filepath.Join(v.modelDir(), "am", "final.mdl"))
	_, err3 := exec.LookPath(v.sox())
	return err1 == nil && err2 == nil && err3 == nil
}

// Transcribe converts the audio and decodes it.
func (v Vosk) Transcribe(ctx context.Context, a Audio) (Speech, error) {
	dir, err := os.MkdirTemp("", "switchboard-stt-")
	if err != nil {
		return Speech{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	wav, err := wav16kMono(ctx, v.sox(), a, dir)
	if err != nil {
		return Speech{}, err
	}
	var out, stderr bytes.Buffer
	dec := exec.CommandContext(ctx, v.python(), "-I", "-c", voskDecodeScript, v.modelDir(), wav)
	dec.Stdout, dec.Stderr = &out, &stderr
	if err := dec.Run(); err != nil {
		if ctx.Err() != nil {
			return Speech{}, ctx.Err()
		}
		return Speech{}, fmt.Errorf("run vosk (%s; hack/install-vosk.sh installs it): %w: %s", v.python(), err, strings.TrimSpace(stderr.String()))
	}
	return parseVosk(out.Bytes())
}

// parseVosk reads the decoding script's output, {"words": [{"start", "end", "word"}]}, and
// splits the words into segments at pauses (SplitSegments): Vosk's own utterances end only at
// long silences, so a whole call often came back as one.
func parseVosk(out []byte) (Speech, error) {
	var r struct {
		Words []struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
			Word  string  `json:"word"`
		} `json:"words"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return Speech{}, fmt.Errorf("vosk output: %w", err)
	}
	words := make([]Word, len(r.Words))
	for i, w := range r.Words {
		words[i] = Word{Start: w.Start, End: w.End, Text: w.Word}
	}
	s := Speech{Language: "en", Segments: SplitSegments(words, DefaultSegmentRules, "speaker")}
	texts := make([]string, len(s.Segments))
	for i, sg := range s.Segments {
		texts[i] = sg.Text
	}
	s.Text = strings.Join(texts, " ")
	return s, nil
}
