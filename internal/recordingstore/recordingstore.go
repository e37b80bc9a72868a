// Package recordingstore keeps the audio of recordings: in a local directory (the default)
// or in an S3-compatible bucket. Keys are the recordings' storage_key values: relative,
// slash-separated paths such as "acct_x/rec_y.wav".
package recordingstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"
	"time"
)

// ErrNotFound is returned by Open when no object is stored under the key.
var ErrNotFound = errors.New("recording audio not found")

// ErrInvalidKey is returned for keys that are empty, absolute or climb out of the store.
var ErrInvalidKey = errors.New("invalid recording key")

// Object is stored audio opened for reading. It can seek, so it can answer Range requests
// (http.ServeContent); the caller must Close it.
type Object struct {
	io.ReadSeekCloser
	Size    int64
	ModTime time.Time
}

// Store keeps recording audio by key.
type Store interface {
	// Open returns the object under key, or ErrNotFound.
	Open(ctx context.Context, key string) (*Object, error)
	// Put stores everything r yields under key, replacing any object there.
	Put(ctx context.Context, key string, r io.Reader) error
	// Delete removes the object under key; a key with nothing stored is not an error.
	Delete(ctx context.Context, key string) error
}

// Backends.
const (
	BackendLocal = "local"
	BackendS3    = "s3"
)

// Config chooses and configures the backend.
type Config struct {
	// Backend is "local" (default) or "s3".
	Backend string
	// Dir is the local directory (backend local); created when missing.
	Dir string
	// S3 configures the bucket (backend s3).
	S3 S3Config
}

// New opens the configured store.
func New(cfg Config) (Store, error) {
	switch cfg.Backend {
	case "", BackendLocal:
		return NewLocal(cfg.Dir)
	case BackendS3:
		return NewS3(cfg.S3)
	default:
		return nil, fmt.Errorf("recording store backend %q: want %q or %q", cfg.Backend, BackendLocal, BackendS3)
	}
}

// checkKey accepts clean, relative, slash-separated keys that stay inside the store.
func checkKey(key string) error {
	switch {
	case key == "", strings.HasPrefix(key, "/"), strings.ContainsAny(key, "\\\x00"),
		path.Clean(key) != key, key == ".", key == "..", strings.HasPrefix(key, "../"):
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// ctxReader stops a copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Extension is the file extension for an audio content type (".wav" for audio/wav), or "".
func Extension(contentType string) string {
	switch contentType {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "audio/ogg":
		return ".ogg"
	case "audio/webm":
		return ".webm"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return ".m4a"
	}
	if exts, err := mime.ExtensionsByType(contentType); err == nil && len(exts) > 0 {
		return exts[0]
	}
	return ""
}
