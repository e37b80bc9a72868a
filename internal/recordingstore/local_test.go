package recordingstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalPutOpenDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l := st.(*Local)
	defer l.Close()

	audio := bytes.Repeat([]byte("RIFF0123"), 1000)
	if err := l.Put(ctx, "acct_1/rec_1.wav", bytes.NewReader(audio)); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "acct_1", "rec_1.wav")); err != nil || !bytes.Equal(got, audio) {
		t.Fatalf("file on disk: %d bytes, %v", len(got), err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "acct_1"))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the recording (no temporary files)", len(entries))
	}

	obj, err := l.Open(ctx, "acct_1/rec_1.wav")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != int64(len(audio)) || obj.ModTime.IsZero() {
		t.Errorf("size %d, mod time %v", obj.Size, obj.ModTime)
	}
	if _, err := obj.Seek(8, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 8)
	if _, err := io.ReadFull(obj, part); err != nil || string(part) != "RIFF0123" {
		t.Errorf("after seek read %q, %v", part, err)
	}
	_ = obj.Close()

	// Put replaces.
	if err := l.Put(ctx, "acct_1/rec_1.wav", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	obj, err = l.Open(ctx, "acct_1/rec_1.wav")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj)
	_ = obj.Close()
	if string(got) != "new" {
		t.Errorf("after replacing: %q", got)
	}

	if err := l.Delete(ctx, "acct_1/rec_1.wav"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open(ctx, "acct_1/rec_1.wav"); !errors.Is(err, ErrNotFound) {
		t.Errorf("open after delete: %v, want ErrNotFound", err)
	}
	if err := l.Delete(ctx, "acct_1/rec_1.wav"); err != nil {
		t.Errorf("deleting twice: %v, want nil", err)
	}
	if _, err := l.Open(ctx, "acct_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("open a directory: %v, want ErrNotFound", err)
	}
}

func TestLocalRefusesKeysOutsideTheDirectory(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "recordings")
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	secret := filepath.Join(parent, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "/etc/passwd", "../secret.txt", "a/../../secret.txt", "a/./b", "a//b", `a\b`, ".", "..", "a/"} {
		if _, err := l.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q): %v, want ErrInvalidKey", key, err)
		}
		if err := l.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", key, err)
		}
		if err := l.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	// A symbolic link inside the directory cannot lead out of it.
	if err := os.Symlink(secret, filepath.Join(dir, "link.wav")); err != nil {
		t.Fatal(err)
	}
	if obj, err := l.Open(ctx, "link.wav"); err == nil {
		_ = obj.Close()
		t.Errorf("opened a file outside the directory through a symbolic link")
	}
}

func TestLocalPutStopsWithTheContext(t *testing.T) {
	dir := t.TempDir()
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Put(ctx, "a.wav", strings.NewReader("data")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left %d files behind", len(entries))
	}
}

func TestNewChoosesTheBackend(t *testing.T) {
	if _, err := New(Config{Backend: "ftp"}); err == nil {
		t.Error("unknown backend accepted")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("local backend without a directory accepted")
	}
	st, err := New(Config{Backend: BackendS3, S3: S3Config{Endpoint: "127.0.0.1:9", Bucket: "recordings", Region: "eu-west-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*S3); !ok {
		t.Errorf("backend s3 gave %T", st)
	}
	if _, err := New(Config{Backend: BackendS3, S3: S3Config{Bucket: "recordings"}}); err == nil {
		t.Error("s3 backend without an endpoint accepted")
	}
}
