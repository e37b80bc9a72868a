package metrics_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// Its own test binary: controller-runtime refuses a second manager with the same controller
// names in one process, and internal/serve's test starts one.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// scrape is one reading of /metrics: metric families by name.
type scrape map[string]*dto.MetricFamily

// value is the counter, gauge or histogram count of name's series whose labels include labels
// (0 when there is none).
func (s scrape) value(name string, labels map[string]string) float64 {
	mf := s[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// The service's metrics endpoint after real traffic through the public API, the platform
// ingestion API and a webhook delivery: each counter moved by exactly the traffic sent, the
// gauges show the cluster's state, and no label carries an account's or endpoint's id.
func TestMetricsCountRealTraffic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t)
	st := env.Store
	demo, err := seed.Demo(ctx, st, seed.DemoOptions{Calls: 5})
	if err != nil {
		t.Fatal(err)
	}

	// The webhook receiver: a real HTTPS server the service trusts through --webhook-ca-file.
	var received atomic.Int32
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	// The speech-to-text engine: an OpenAI-compatible HTTP server (the machine cannot run the real one).
	speech := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"text":"Hello, the boiler is leaking, please call me back.","language":"en","duration":80,` +
			`"segments":[{"start":0,"end":4,"text":"Hello, the boiler is leaking, please call me back."}]}`))
	}))
	defer speech.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: receiver.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	const perMinute = 12
	apiAddr, platformAddr, probeAddr, metricsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{DatabaseURL: env.DatabaseURL, APIAddr: apiAddr, MetricsAddr: metricsAddr, ProbeAddr: probeAddr,
			RequestsPerMinute: perMinute, RestConfig: env.ControlPlane.Config, Clock: clock.RealClock{}, Log: logr.Discard(),
			Recordings: recordingstore.Config{Dir: t.TempDir()}, LinkSigningKey: []byte(strings.Repeat("k", 32)),
			PlatformAddr: platformAddr, PlatformToken: "platform-secret", Ready: func() { close(ready) },
			Webhooks:      serve.WebhookOptions{AllowPrivateTargets: true, CAFile: caFile},
			Transcription: transcription.EngineConfig{Speech: transcription.SpeechOpenAI, SpeechURL: speech.URL, SpeechAPIKey: "test"}})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the API did not start within a minute")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("Run ended: %v", err)
		}
	}()

	read := func() scrape {
		t.Helper()
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d", resp.StatusCode)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		return families
	}
	call := func(method, url, token string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, url, rd)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	api := "http://" + apiAddr + "/v1"
	platform := "http://" + platformAddr + "/platform/v1"
	// Ready means the APIs serve; the manager's metrics server binds on its own a moment
	// later (on a loaded machine, after the first request here).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics did not answer within 30 s: %v", err)
		}
	}
	before := read()

	// Public API: three reads, a missing call, a path no route has, a request without a key.
	for range 3 {
		if status, body := call("GET", api+"/me", demo.OwnerKey, nil); status != 200 {
			t.Fatalf("GET /me: %d %v", status, body)
		}
	}
	if status, _ := call("GET", api+"/calls/cl_doesnotexist", demo.OwnerKey, nil); status != 404 {
		t.Fatalf("GET a missing call: %d", status)
	}
	if status, _ := call("GET", api+"/calls/cl_doesnotexist/nothing", demo.OwnerKey, nil); status != 404 {
		t.Fatalf("GET a path no route has: %d", status)
	}
	if status, _ := call("GET", api+"/me", "", nil); status != 401 {
		t.Fatalf("GET /me without a key: %d", status)
	}

	// Platform ingestion: a text stored, one rejected, one to a number no account has.
	_, numbers := call("GET", platform+"/numbers", "platform-secret", nil)
	list, _ := numbers["numbers"].([]any)
	if len(list) == 0 {
		t.Fatalf("no live numbers: %v", numbers)
	}
	to, _ := list[0].(string)
	text := map[string]any{"to": to, "from": "07700 900777", "body": "Running late", "received_at": time.Now().UTC().Format(time.RFC3339)}
	if status, body := call("POST", platform+"/texts", "platform-secret", text); status != 201 {
		t.Fatalf("text: %d %v", status, body)
	}
	if status, _ := call("POST", platform+"/texts", "platform-secret", map[string]any{"to": to}); status != 422 {
		t.Fatalf("invalid text: %d", status)
	}
	text["to"] = "+442079460999"
	if status, _ := call("POST", platform+"/texts", "platform-secret", text); status != 404 {
		t.Fatalf("text to an unknown number: %d", status)
	}

	// A webhook endpoint and its test delivery, answered 204 by the receiver.
	status, created := call("POST", api+"/webhooks", demo.OwnerKey, map[string]any{"name": "ops", "url": receiver.URL + "/hook",
		"events": []string{"call.ended"}})
	if status != 201 {
		t.Fatalf("POST /webhooks: %d %v", status, created)
	}
	endpoint, _ := created["endpoint"].(map[string]any)
	id, _ := endpoint["public_id"].(string)
	if status, body := call("POST", api+"/webhooks/"+id+"/test", demo.OwnerKey, nil); status != 202 {
		t.Fatalf("POST /webhooks/%s/test: %d %v", id, status, body)
	}

	delta := func(now scrape, name string, labels map[string]string) float64 {
		return now.value(name, labels) - before.value(name, labels)
	}
	// The delivery is counted once its outcome is recorded, just after the receiver answers.
	var after scrape
	deadline := time.Now().Add(60 * time.Second)
	for {
		after = read()
		if delta(after, "switchboard_webhook_deliveries_finished_total", map[string]string{"outcome": "succeeded"}) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test delivery was not counted within a minute (receiver got %d requests)", received.Load())
		}
		time.Sleep(200 * time.Millisecond)
	}

	want := []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"switchboard_api_requests_total", map[string]string{"route": "/v1/me", "method": "GET", "code": "200"}, 3},
		{"switchboard_api_requests_total", map[string]string{"route": "/v1/me", "method": "GET", "code": "401"}, 1},
		{"switchboard_api_requests_total", map[string]string{"route": "/v1/calls/{call}", "method": "GET", "code": "404"}, 1},
		{"switchboard_api_requests_total", map[string]string{"route": "unmatched", "method": "GET", "code": "404"}, 1},
		{"switchboard_api_requests_total", map[string]string{"route": "/v1/webhooks", "method": "POST", "code": "201"}, 1},
		{"switchboard_api_requests_total", map[string]string{"route": "/v1/webhooks/{endpoint}/test", "method": "POST", "code": "202"}, 1},
		{"switchboard_api_request_duration_seconds", map[string]string{"route": "/v1/me", "method": "GET"}, 4},
		{"switchboard_ingest_reports_total", map[string]string{"kind": "text", "result": "stored"}, 1},
		{"switchboard_ingest_reports_total", map[string]string{"kind": "text", "result": "rejected"}, 1},
		{"switchboard_ingest_reports_total", map[string]string{"kind": "text", "result": "unknown_number"}, 1},
		{"switchboard_ingest_reports_total", nil, 3}, // GET /numbers is not a report
		{"switchboard_webhook_attempts_total", map[string]string{"result": "2xx"}, 1},
		{"switchboard_webhook_attempts_total", nil, 1},
		{"switchboard_webhook_deliveries_finished_total", nil, 1},
		{"switchboard_webhook_event_to_success_seconds", nil, 1},
		{"switchboard_api_rate_limited_total", nil, 0},
	}
	for _, w := range want {
		if got := delta(after, w.name, w.labels); got != w.delta {
			t.Errorf("%s%v moved by %v, want %v", w.name, w.labels, got, w.delta)
		}
	}
	if got := received.Load(); got != 1 {
		t.Errorf("the receiver got %d requests, want 1", got)
	}
	// Gauges: this cluster's one endpoint is active; the outbox is read from PostgreSQL.
	if got := after.value("switchboard_webhook_endpoints", map[string]string{"phase": "Active"}); got != 1 {
		t.Errorf("active endpoints = %v, want 1", got)
	}
	if after["switchboard_webhook_endpoints"] == nil || after["switchboard_webhook_outbox_events_waiting"] == nil ||
		after["switchboard_webhook_outbox_oldest_event_age_seconds"] == nil || after["switchboard_webhook_deliveries_live"] == nil ||
		after["switchboard_webhook_deliveries_deferred"] == nil {
		t.Error("a scrape-time gauge is missing")
	}
	if got := after.value("switchboard_webhook_deliveries_deferred", nil); got != 0 {
		t.Errorf("deferred deliveries = %v, want 0 (nothing near the live caps)", got)
	}
	if got := after.value("switchboard_metrics_collect_errors_total", nil); got != 0 {
		t.Errorf("%v gauge reads failed", got)
	}
	// No label value is an account's, key's or endpoint's id.
	for name, mf := range after {
		if !strings.HasPrefix(name, "switchboard_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v := lp.GetValue(); strings.Contains(v, id) || strings.Contains(v, demo.AccountPublicID) || strings.Contains(v, "cl_doesnotexist") {
					t.Errorf("%s has label %s=%q", name, lp.GetName(), v)
				}
			}
		}
	}

	// A recorded call reported twice (stored, then a duplicate) and transcribed: the charge's
	// minutes and pence, and the job's end, are counted once.
	before = after
	rec := map[string]any{"kind": "call", "duration_seconds": 80, "audio_base64": base64.StdEncoding.EncodeToString([]byte("RIFF....WAVEfmt audio"))}
	report := map[string]any{"platform_ref": "metrics-1", "to": to, "from": "+44 7700 900123", "disposition": "answered",
		"started_at": time.Now().UTC().Add(-5 * time.Minute).Format(time.RFC3339), "duration_seconds": 95, "talk_seconds": 80, "recording": rec}
	status, receipt := call("POST", platform+"/calls", "platform-secret", report)
	if status != 201 {
		t.Fatalf("call report: %d %v", status, receipt)
	}
	if status, _ := call("POST", platform+"/calls", "platform-secret", report); status != 200 {
		t.Fatalf("repeated call report: %d", status)
	}
	callID, _ := receipt["call_public_id"].(string)
	// The owner key may start it automatically (auto-transcribe); asking again costs nothing.
	if status, body := call("POST", api+"/calls/"+callID+"/transcribe", demo.OwnerKey, nil); status != 202 {
		t.Fatalf("transcribe: %d %v", status, body)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		after = read()
		if delta(after, "switchboard_transcription_jobs_finished_total", nil) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transcription job was not counted within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var minutes, allowance, bundle int
	var pence int64
	if err := storetest.SQL(t, st).QueryRow(ctx, `SELECT ch.minutes, ch.allowance_minutes, ch.bundle_minutes, ch.amount_pence
		FROM transcription_charges ch JOIN calls c ON c.id = ch.call_id WHERE c.public_id = $1`, callID).Scan(&minutes, &allowance, &bundle, &pence); err != nil {
		t.Fatalf("the call's charge: %v", err)
	}
	if minutes == 0 {
		t.Fatal("the charge is for 0 minutes")
	}
	for _, w := range []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"switchboard_ingest_reports_total", map[string]string{"kind": "call", "result": "stored"}, 1},
		{"switchboard_ingest_reports_total", map[string]string{"kind": "call", "result": "duplicate"}, 1},
		{"switchboard_transcription_jobs_finished_total", map[string]string{"outcome": "completed"}, 1},
		{"switchboard_transcription_jobs_finished_total", nil, 1},
		{"switchboard_transcription_job_duration_seconds", map[string]string{"outcome": "completed"}, 1},
		{"switchboard_transcription_charged_minutes_total", map[string]string{"source": "allowance"}, float64(allowance)},
		{"switchboard_transcription_charged_minutes_total", map[string]string{"source": "bundle"}, float64(bundle)},
		{"switchboard_transcription_charged_minutes_total", map[string]string{"source": "balance"}, float64(minutes - allowance - bundle)},
		{"switchboard_transcription_charged_pence_total", nil, float64(pence)},
		{"switchboard_transcription_refunded_pence_total", nil, 0},
	} {
		if got := delta(after, w.name, w.labels); got != w.delta {
			t.Errorf("%s%v moved by %v, want %v", w.name, w.labels, got, w.delta)
		}
	}

	// The per-user limit: every 429 is counted once under per_user.
	before = after
	refused := 0
	for i := 0; i < 2*perMinute && refused < 2; i++ {
		if status, _ := call("GET", api+"/me", demo.OwnerKey, nil); status == 429 {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no request was refused past the per-user limit")
	}
	after = read()
	if got := delta(after, "switchboard_api_rate_limited_total", map[string]string{"limit": "per_user"}); got != float64(refused) {
		t.Errorf("per_user refusals moved by %v, want %d", got, refused)
	}
	if got := delta(after, "switchboard_api_requests_total", map[string]string{"route": "/v1/me", "code": "429"}); got != float64(refused) {
		t.Errorf("429s of /v1/me moved by %v, want %d", got, refused)
	}
}
