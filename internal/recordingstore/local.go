package recordingstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Local keeps recordings as files under one directory. Every access goes through an
// os.Root, so no key can reach a file outside the directory, even through symbolic links.
type Local struct {
	root *os.Root
}

var _ Store = (*Local)(nil)

// NewLocal opens (creating it if needed) the directory dir.
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("recording store: the local backend needs a directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("recording store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("recording store: %w", err)
	}
	return &Local{root: root}, nil
}

// Close releases the directory.
func (l *Local) Close() error { return l.root.Close() }

// Open opens the file under key.
func (l *Local) Open(_ context.Context, key string) (*Object, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := l.root.Open(filepath.FromSlash(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, ErrNotFound
	}
	return &Object{ReadSeekCloser: f, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Put writes r to a temporary file beside key and renames it into place, so readers
// never see a half-written recording.
func (l *Local) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := checkKey(key); err != nil {
		return err
	}
	name := filepath.FromSlash(key)
	if dir := path.Dir(key); dir != "." {
		if err := l.root.MkdirAll(filepath.FromSlash(dir), 0o750); err != nil {
			return err
		}
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := name + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := l.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = l.root.Remove(tmp)
		}
	}()
	if _, err = io.Copy(f, ctxReader{ctx, r}); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return l.root.Rename(tmp, name)
}

// Delete removes the file under key.
func (l *Local) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := l.root.Remove(filepath.FromSlash(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
