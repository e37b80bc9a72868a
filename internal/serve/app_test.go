package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// The whole service in one process, as `switchboard serve` and `make run` start it: the
// manager against a real kube-apiserver, the public API and the ingestion API on their own
// listeners; it stops cleanly when its context ends.
func TestRunServesBothAPIsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t)
	recordingsDir := t.TempDir()
	demo, err := seed.Demo(ctx, env.Store, seed.DemoOptions{Calls: 20})
	if err != nil {
		t.Fatal(err)
	}

	apiAddr, platformAddr, probeAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{DatabaseURL: env.DatabaseURL, APIAddr: apiAddr, MetricsAddr: "0", ProbeAddr: probeAddr,
			RequestsPerMinute: 60, RestConfig: env.ControlPlane.Config, Clock: clock.RealClock{}, Log: logr.Discard(),
			Recordings: recordingstore.Config{Dir: recordingsDir}, LinkSigningKey: []byte(strings.Repeat("k", 32)),
			PlatformAddr: platformAddr, PlatformToken: "platform-secret", Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the API did not start within a minute")
	}

	get := func(url, token string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if status, body := get("http://"+apiAddr+"/v1/me", demo.OwnerKey); status != 200 || body["tenant"].(map[string]any)["name"] != "Acme Plumbing Ltd" {
		t.Errorf("GET /v1/me: %d %v", status, body)
	}
	if status, body := get("http://"+platformAddr+"/platform/v1/numbers", "platform-secret"); status != 200 || len(body["numbers"].([]any)) != 2 {
		t.Errorf("platform numbers: %d %v", status, body)
	}
	// The platform API is not on the public port, and the public API does not take the platform token.
	if status, _ := get("http://"+apiAddr+"/platform/v1/numbers", "platform-secret"); status == 200 {
		t.Error("the ingestion API answers on the public port")
	}
	if status, _ := get(fmt.Sprintf("http://%s/readyz", probeAddr), ""); status != 200 {
		t.Errorf("readyz: %d", status)
	}
	t.Run("Go client", func(t *testing.T) { checkGoClient(t, ctx, apiAddr, demo.OwnerKey, 20) })
	// serve's defaults: webhook endpoints on this machine are refused (`make run` allows them),
	// and there is no development outbox.
	t.Run("defaults refuse loopback webhooks and have no outbox", func(t *testing.T) {
		body := strings.NewReader(`{"name": "local", "url": "https://127.0.0.1:3000/hooks", "events": ["call.ended"]}`)
		req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/webhooks", body)
		req.Header.Set("Authorization", "Bearer "+demo.OwnerKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Errors map[string][]string `json:"errors"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&answer)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("POST /v1/webhooks to a loopback address: %d, want 422", resp.StatusCode)
		}
		if got := strings.Join(answer.Errors["url"], " "); !strings.Contains(got, "public internet") {
			t.Errorf("the refusal's url detail is %q", got)
		}
		if status, _ := get("http://"+apiAddr+"/portal/dev/outbox", ""); status != http.StatusNotFound {
			t.Errorf("GET /portal/dev/outbox: %d, want 404", status)
		}
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v on shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop within 30 s of its context ending")
	}
	if _, err := net.DialTimeout("tcp", apiAddr, time.Second); err == nil {
		t.Error("the API still listens after Run returned")
	}
}
