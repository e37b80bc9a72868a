package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/retention"
	"github.com/switchboard-dev/switchboard/internal/storetest"
	"github.com/switchboard-dev/switchboard/internal/testenv"
)

// A bad setting of a leader-only part (here the webhook CA file) stops Run before anything
// serves, although those parts are otherwise started only in leader terms.
func TestRunFailsFastOnALeaderOnlySettingError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp := testenv.ControlPlane(t)
	served := false
	err := app.Run(ctx, app.Options{DatabaseURL: storetest.NewDatabaseURL(t), APIAddr: "127.0.0.1:0", MetricsAddr: "0",
		RestConfig: cp.Config, Clock: clock.RealClock{}, Log: logr.Discard(),
		Recordings: recordingstore.Config{Dir: t.TempDir()}, LinkSigningKey: []byte(strings.Repeat("k", 32)),
		Webhooks: app.WebhookOptions{CAFile: filepath.Join(t.TempDir(), "missing.pem")}, Ready: func() { served = true }})
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
	err := app.Run(ctx, app.Options{DatabaseURL: "postgres://127.0.0.1:1/none", APIAddr: "127.0.0.1:0", MetricsAddr: "0",
		Clock: clock.RealClock{}, Log: logr.Discard(), Retention: retention.Config{Window: 6 * time.Hour},
		Ready: func() { served = true }})
	if err == nil || served || !strings.Contains(err.Error(), "--webhook-retention=6h0m0s is shorter than") ||
		!strings.Contains(err.Error(), retention.MinWindow().String()) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run = %v (served: %v), want one line refusing --webhook-retention=6h", err, served)
	}
}
