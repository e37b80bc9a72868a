package recordingstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config addresses an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2, ...).
type S3Config struct {
	// Endpoint is host[:port] without a scheme, e.g. "s3.eu-west-2.amazonaws.com" or "minio:9000".
	Endpoint  string
	Bucket    string
	AccessKey string
	SecretKey string
	// Region is the bucket's region; set it to spare a location lookup.
	Region string
	// UseSSL talks HTTPS to the endpoint.
	UseSSL bool
	// Transport replaces the HTTP transport (tests, custom CAs); nil uses the default.
	Transport http.RoundTripper
}

// S3 keeps recordings as objects in one bucket.
type S3 struct {
	client *minio.Client
	bucket string
}

var _ Store = (*S3)(nil)

// NewS3 builds the client; it does not contact the endpoint.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("recording store: the s3 backend needs an endpoint and a bucket")
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:    cfg.UseSSL,
		Region:    cfg.Region,
		Transport: cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("recording store: %w", err)
	}
	return &S3{client: client, bucket: cfg.Bucket}, nil
}

// ErrNoBucket is CheckBucket's error for a bucket the store answers does not exist.
var ErrNoBucket = errors.New("the bucket does not exist")

// CheckBucket reports an error when the bucket cannot be reached or does not exist
// (ErrNoBucket); call it at start-up, since a missing object and a missing bucket look alike
// when reading.
func (s *S3) CheckBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("recording store: bucket %q: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("recording store: bucket %q: %w", s.bucket, ErrNoBucket)
	}
	return nil
}

// Open returns the object, which reads lazily and answers seeks with ranged GETs, so
// the audio route streams from the bucket without copying the whole file first.
func (s *S3) Open(ctx context.Context, key string) (*Object, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, mapS3Error(err)
	}
	st, err := obj.Stat()
	if err != nil {
		_ = obj.Close()
		return nil, mapS3Error(err)
	}
	return &Object{ReadSeekCloser: obj, Size: st.Size, ModTime: st.LastModified}, nil
}

// Put uploads r. A reader of unknown length is first spooled to a temporary file, because
// an upload of unknown length makes the client buffer very large multipart chunks.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) error {
	if err := checkKey(key); err != nil {
		return err
	}
	size, ok := readerSize(r)
	if !ok {
		tmp, err := os.CreateTemp("", "recording-*")
		if err != nil {
			return err
		}
		defer func() {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}()
		if size, err = io.Copy(tmp, ctxReader{ctx, r}); err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r = tmp
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{})
	return mapS3Error(err)
}

// Delete removes the object; S3 treats a missing key as success too.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return mapS3Error(s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

// readerSize reports the bytes left in r when r can tell without being read.
func readerSize(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader
		return int64(v.Len()), true
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return st.Size() - pos, true
	}
	return 0, false
}

// mapS3Error turns the service's "no such key" into ErrNotFound.
func mapS3Error(err error) error {
	if err == nil {
		return nil
	}
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound":
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
