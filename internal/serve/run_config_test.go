package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/retention"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// A bad setting of a leader-only part (here the webhook CA file) stops Run before anything
// serves, although those parts are otherwise started only in leader terms.
func TestRunFailsFastOnALeaderOnlySettingError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp := testenv.ControlPlane(t)
	served := false
	err := serve.Run(ctx, serve.Options{DatabaseURL: storetest.NewDatabaseURL(t), APIAddr: "127.0.0.1:0", MetricsAddr: "0",
		RestConfig: cp.Config, Clock: clock.RealClock{}, Log: logr.Discard(),
		Recordings: recordingstore.Config{Dir: t.TempDir()}, LinkSigningKey: []byte(strings.Repeat("k", 32)),
		Webhooks: serve.WebhookOptions{CAFile: filepath.Join(t.TempDir(), "missing.pem")}, Ready: func() { served = true }})
	if err == nil || !strings.Contains(err.Error(), "read the webhook CA file") || served {
		t.Fatalf("Run = %v (served: %v), want the CA file error before serving", err, served)
	}
}

// A retention window shorter than a delivery's retries is refused before anything starts,
// with one line naming the flag and the shortest window allowed.
func TestRunRefusesARetentionShorterThanTheRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := false
	err := serve.Run(ctx, serve.Options{DatabaseURL: "postgres://127.0.0.1:1/none", APIAddr: "127.0.0.1:0", MetricsAddr: "0",
		Clock: clock.RealClock{}, Log: logr.Discard(), Retention: retention.Config{Window: 6 * time.Hour},
		Ready: func() { served = true }})
	if err == nil || served || !strings.Contains(err.Error(), "--webhook-retention=6h0m0s is shorter than") ||
		!strings.Contains(err.Error(), retention.MinWindow().String()) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run = %v (served: %v), want one line refusing --webhook-retention=6h", err, served)
	}
}

// An S3 recording store whose bucket does not exist stops Run before anything serves, with
// the flag to fix; the store here answers the S3 protocol's "no such bucket" to every request.
func TestRunRefusesAnS3BucketThatDoesNotExist(t *testing.T) {
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code>` +
				`<Message>The specified bucket does not exist</Message><BucketName>recordings</BucketName></Error>`))
		}
	}))
	defer s3.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := false
	err := serve.Run(ctx, serve.Options{DatabaseURL: "postgres://127.0.0.1:1/none", APIAddr: "127.0.0.1:0", MetricsAddr: "0",
		Clock: clock.RealClock{}, Log: logr.Discard(), LinkSigningKey: []byte(strings.Repeat("k", 32)),
		Recordings: recordingstore.Config{Backend: recordingstore.BackendS3, S3: recordingstore.S3Config{
			Endpoint: strings.TrimPrefix(s3.URL, "http://"), Bucket: "recordings", AccessKey: "a", SecretKey: "b", Region: "eu-west-2"}},
		Ready: func() { served = true }})
	if err == nil || served || !errors.Is(err, recordingstore.ErrNoBucket) || !strings.Contains(err.Error(), "--s3-bucket") {
		t.Fatalf("Run = %v (served: %v), want the missing bucket refused before serving", err, served)
	}
}
