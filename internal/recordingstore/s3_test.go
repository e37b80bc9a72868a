package recordingstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeS3 is an in-process stand-in for an S3-compatible service: enough of GET, HEAD, PUT
// and DELETE on objects of one bucket to exercise the client wiring. It is no substitute
// for a real service (signatures are not checked), which these tests do not have.
type fakeS3 struct {
	bucket string
	mu     sync.Mutex
	data   map[string][]byte
}

var fakeModTime = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/" + f.bucket + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		f.fail(w, http.StatusNotFound, "NoSuchBucket", r.URL.Path)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, prefix)
	if key == "" && r.Method == http.MethodHead { // the bucket itself
		w.WriteHeader(http.StatusOK)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		b, ok := f.data[key]
		if !ok {
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			f.fail(w, http.StatusNotFound, "NoSuchKey", key)
			return
		}
		w.Header().Set("ETag", `"`+strconv.Itoa(len(b))+`"`)
		w.Header().Set("Content-Type", "audio/wav")
		http.ServeContent(w, r, "", fakeModTime, bytes.NewReader(b))
	case http.MethodPut:
		body, err := readS3Body(r)
		if err != nil {
			f.fail(w, http.StatusBadRequest, "IncompleteBody", err.Error())
			return
		}
		f.data[key] = body
		w.Header().Set("ETag", `"`+strconv.Itoa(len(body))+`"`)
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		delete(f.data, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		f.fail(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

func (f *fakeS3) object(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.data[key]
	return b, ok
}

func (f *fakeS3) fail(w http.ResponseWriter, status int, code, resource string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource></Error>`, code, code, resource)
}

// readS3Body reads a PUT body, decoding the aws-chunked framing the client uses for a
// streaming signature over plain HTTP.
func readS3Body(r *http.Request) ([]byte, error) {
	if !strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		return io.ReadAll(r.Body)
	}
	br := bufio.NewReader(r.Body)
	var out bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		sizeHex, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(sizeHex, 16, 64)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out.Bytes(), nil
		}
		if _, err := io.CopyN(&out, br, n); err != nil {
			return nil, err
		}
		if _, err := br.Discard(2); err != nil {
			return nil, err
		}
	}
}

func newFakeS3(t *testing.T, tls bool) (*S3, *fakeS3) {
	t.Helper()
	fake := &fakeS3{bucket: "recordings", data: map[string][]byte{}}
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(fake)
	} else {
		srv = httptest.NewServer(fake)
	}
	t.Cleanup(srv.Close)
	cfg := S3Config{Endpoint: strings.TrimPrefix(strings.TrimPrefix(srv.URL, "https://"), "http://"),
		Bucket: "recordings", AccessKey: "access", SecretKey: "secret", Region: "eu-west-2", UseSSL: tls}
	if tls {
		cfg.Transport = srv.Client().Transport
	}
	st, err := NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, fake
}

func TestS3AgainstAFakeService(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			ctx := context.Background()
			st, fake := newFakeS3(t, tls)
			audio := bytes.Repeat([]byte("0123456789"), 300)

			if err := st.Put(ctx, "acct_1/rec_1.wav", bytes.NewReader(audio)); err != nil {
				t.Fatal(err)
			}
			if got, _ := fake.object("acct_1/rec_1.wav"); !bytes.Equal(got, audio) {
				t.Fatalf("stored %d bytes, want the %d sent", len(got), len(audio))
			}

			obj, err := st.Open(ctx, "acct_1/rec_1.wav")
			if err != nil {
				t.Fatal(err)
			}
			if obj.Size != int64(len(audio)) || !obj.ModTime.Equal(fakeModTime) {
				t.Errorf("size %d, mod time %v", obj.Size, obj.ModTime)
			}
			if _, err := obj.Seek(2995, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			tail, err := io.ReadAll(obj)
			if err != nil || string(tail) != "56789" {
				t.Errorf("read after seek: %q, %v", tail, err)
			}
			_ = obj.Close()

			// A reader of unknown length is spooled and sent with its length.
			if err := st.Put(ctx, "acct_1/rec_2.wav", io.MultiReader(strings.NewReader("abc"), strings.NewReader("def"))); err != nil {
				t.Fatal(err)
			}
			if got, _ := fake.object("acct_1/rec_2.wav"); string(got) != "abcdef" {
				t.Errorf("spooled upload stored %q", got)
			}

			if _, err := st.Open(ctx, "acct_1/missing.wav"); !errors.Is(err, ErrNotFound) {
				t.Errorf("open a missing key: %v, want ErrNotFound", err)
			}
			if err := st.Delete(ctx, "acct_1/rec_1.wav"); err != nil {
				t.Fatal(err)
			}
			if _, ok := fake.object("acct_1/rec_1.wav"); ok {
				t.Error("object still stored after Delete")
			}
			if _, err := st.Open(ctx, "acct_1/rec_1.wav"); !errors.Is(err, ErrNotFound) {
				t.Errorf("open after delete: %v, want ErrNotFound", err)
			}
			if _, err := st.Open(ctx, "../escape"); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("open ../escape: %v, want ErrInvalidKey", err)
			}
		})
	}
}

func TestS3CheckBucket(t *testing.T) {
	st, _ := newFakeS3(t, false)
	if err := st.CheckBucket(context.Background()); err != nil {
		t.Errorf("existing bucket: %v", err)
	}
	st.bucket = "other-bucket"
	if err := st.CheckBucket(context.Background()); err == nil {
		t.Error("missing bucket passed the check")
	}
}

func TestReaderSize(t *testing.T) {
	if n, ok := readerSize(strings.NewReader("hello")); !ok || n != 5 {
		t.Errorf("strings.Reader: %d %v", n, ok)
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _ = f.WriteString("0123456789")
	_, _ = f.Seek(4, io.SeekStart)
	if n, ok := readerSize(f); !ok || n != 6 {
		t.Errorf("file at offset 4: %d %v", n, ok)
	}
	if _, ok := readerSize(io.MultiReader()); ok {
		t.Error("a reader of unknown length reported a size")
	}
}
