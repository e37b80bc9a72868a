package transcription

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// soxReadable returns a file sox can read with the audio at path: path itself, or for Ogg
// Opus (which Debian's sox does not read) a WAV made with opusdec (Debian's opus-tools) in dir.
// sox reads WAV in PCM, mu-law and a-law, and MP3 with libsox-fmt-mp3.
func soxReadable(ctx context.Context, path, dir string) (string, error) {
	head := make([]byte, 64)
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	n, _ := f.Read(head)
	_ = f.Close()
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("OggS")) || !bytes.Contains(head, []byte("OpusHead")) {
		return path, nil
	}
	wav := filepath.Join(dir, "opus.wav")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "opusdec", "--quiet", path, wav)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if _, ok := err.(*exec.ExitError); ok {
			return "", Permanent(fmt.Errorf("the Opus audio cannot be read: %s", strings.TrimSpace(stderr.String())))
		}
		return "", fmt.Errorf("run opusdec (hack/install-speech-tools.sh installs it): %w", err)
	}
	return wav, nil
}
