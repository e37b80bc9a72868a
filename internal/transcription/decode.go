package transcription

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// wav16kMono writes the recording to dir and converts it with sox to the 16 kHz mono 16-bit
// WAV the local engines read, returning its path. Audio sox cannot read is a permanent error.
func wav16kMono(ctx context.Context, sox string, a Audio, dir string) (string, error) {
	in := filepath.Join(dir, "in"+audioExt(a.Filename))
	f, err := os.Create(in)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, a.Data); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("read the audio: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if in, err = soxReadable(ctx, in, dir); err != nil {
		return "", err
	}
	wav := filepath.Join(dir, "16k.wav")
	var soxErr bytes.Buffer
	// -D: no dither, so the same recording always gives the same transcript.
	conv := exec.CommandContext(ctx, sox, "-q", "-V1", "-D", in, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", wav)
	conv.Stderr = &soxErr
	if err := conv.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if _, ok := err.(*exec.ExitError); ok {
			return "", Permanent(fmt.Errorf("the audio cannot be read: %s", strings.TrimSpace(soxErr.String())))
		}
		return "", fmt.Errorf("run %s: %w", sox, err)
	}
	return wav, nil
}
