package pgrestart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

const platformToken = "platform-token-for-fault-tests"

// outcome is what one request got.
type outcome struct {
	op         string
	status     int // 0: no HTTP answer at all
	retryAfter string
	body       string
	at         time.Time
}

// load is the traffic of the test and what came of it.
type load struct {
	api, platform string
	key           string
	client        *http.Client
	seq           atomic.Int64

	mu         sync.Mutex
	outcomes   []outcome
	contacts   []string          // public ids of contacts answered 201
	calls      map[string]string // platform_ref -> call id of reports answered 2xx
	unanswered []string          // platform_refs of call reports not answered 2xx (sent again later)
}

func (l *load) do(op, method, url, auth string, body any) (outcome, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", "application/json")
	o := outcome{op: op}
	resp, err := l.client.Do(req)
	o.at = time.Now()
	if err != nil {
		o.body = err.Error()
		return o, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	o.status, o.retryAfter, o.body = resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	return o, b
}

func (l *load) record(o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
}

func (l *load) readCalls() {
	o, _ := l.do("GET /v1/calls", "GET", l.api+"/v1/calls?per_page=10", l.key, nil)
	l.record(o)
}

func (l *load) readContacts() {
	o, _ := l.do("GET /v1/contacts", "GET", l.api+"/v1/contacts?per_page=10", l.key, nil)
	l.record(o)
}

func (l *load) readNumbers() {
	o, _ := l.do("GET /platform/v1/numbers", "GET", l.platform+"/platform/v1/numbers", platformToken, nil)
	l.record(o)
}

func (l *load) addContact() {
	n := l.seq.Add(1)
	o, b := l.do("POST /v1/contacts", "POST", l.api+"/v1/contacts", l.key,
		map[string]any{"display_name": fmt.Sprintf("Fault contact %d", n), "phones": []any{}})
	l.record(o)
	if o.status == http.StatusCreated {
		var c struct {
			PublicID string `json:"public_id"`
		}
		_ = json.Unmarshal(b, &c)
		l.mu.Lock()
		l.contacts = append(l.contacts, c.PublicID)
		l.mu.Unlock()
	}
}

func callReport(ref string) map[string]any {
	return map[string]any{"platform_ref": ref, "to": "+442079460555", "from": "+447700900123", "caller_name": "Ola",
		"disposition": "answered", "started_at": time.Now().Add(-5 * time.Minute).UTC().Format(time.RFC3339),
		"duration_seconds": 95, "talk_seconds": 80,
		"answer": map[string]any{"staff_member": "Kim", "department": "Sales", "target_type": "staff", "target_label": "Kim's mobile"}}
}

// reportCall sends a call report; a report not answered 2xx is the platform's to send again.
func (l *load) reportCall(ref string) outcome {
	o, b := l.do("POST /platform/v1/calls", "POST", l.platform+"/platform/v1/calls", platformToken, callReport(ref))
	var receipt ingest.CallReceipt
	_ = json.Unmarshal(b, &receipt)
	l.mu.Lock()
	defer l.mu.Unlock()
	if o.status/100 == 2 {
		l.calls[ref] = receipt.CallPublicID
	}
	return o
}

func (l *load) addCall() {
	ref := fmt.Sprintf("fault-call-%d", l.seq.Add(1))
	o := l.reportCall(ref)
	l.record(o)
	if o.status/100 != 2 {
		l.mu.Lock()
		l.unanswered = append(l.unanswered, ref)
		l.mu.Unlock()
	}
}

// PostgreSQL restarted (stopped, down a second, started on the same port) while reads and
// writes hit the public API and the platform ingestion API: no request gets a 500 or goes
// unanswered, every 503 carries Retry-After, the API recovers by itself, and every write
// answered 2xx is there afterwards (reports not answered 2xx, sent again, are stored once).
func TestPostgreSQLRestartUnderLoad(t *testing.T) {
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	if err := cluster.CreateDatabase(ctx, "switchboard", ""); err != nil {
		t.Fatal(err)
	}
	url := cluster.URL("switchboard")
	if _, err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, url)
	tenant := apitest.NewTenant(t, st, plans.Business)
	if _, err := st.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID, E164: "+442079460555", Label: "Front desk"}); err != nil {
		t.Fatal(err)
	}

	api := httptest.NewUnstartedServer(nil)
	base := "http://" + api.Listener.Addr().String()
	api.Config.Handler = apiserver.New(apiserver.Config{BaseURL: base, RequestsPerMinute: 1_000_000, Clock: clock.RealClock{}, Log: logr.Discard()}, st)
	api.Start()
	t.Cleanup(api.Close)
	platform := httptest.NewServer(ingest.New(ingest.Config{Token: platformToken, LinkSigningKey: []byte("a link signing key of 32 bytes!!"),
		Clock: clock.RealClock{}, Log: logr.Discard(), Links: events.Links{APIBaseURL: base, DashboardURL: "https://app.example.test"}}, st))
	t.Cleanup(platform.Close)

	l := &load{api: base, platform: platform.URL, key: tenant.OwnerKey, calls: map[string]string{},
		client: &http.Client{Timeout: 30 * time.Second}}
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for _, op := range []func(){l.readCalls, l.readCalls, l.readContacts, l.readNumbers, l.addContact, l.addContact, l.addCall, l.addCall} {
		workers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					op()
				}
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	stoppedAt := time.Now()
	if err := cluster.StopServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cluster.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	workers.Wait()

	// The platform sends again what was not answered 2xx; each is then stored once.
	for _, ref := range l.unanswered {
		if o := l.reportCall(ref); o.status/100 != 2 {
			t.Errorf("report %s sent again after the restart: %d %s", ref, o.status, o.body)
		}
	}

	byStatus := map[string]int{}
	var lastFailure time.Time
	badRetryAfter, served := 0, 0
	for _, o := range l.outcomes {
		byStatus[fmt.Sprintf("%s %d", o.op, o.status)]++
		switch {
		case o.status == 0:
			t.Errorf("%s: no answer: %s", o.op, o.body)
		case o.status == http.StatusServiceUnavailable:
			if o.retryAfter == "" {
				badRetryAfter++
			}
		case o.status >= 500:
			t.Errorf("%s: %d %s", o.op, o.status, o.body)
		case o.status >= 400:
			t.Errorf("%s: %d %s (a client error for a good request)", o.op, o.status, o.body)
		}
		if o.status/100 == 2 {
			served++
		} else if o.at.After(lastFailure) {
			lastFailure = o.at
		}
	}
	lines := make([]string, 0, len(byStatus))
	for k, v := range byStatus {
		lines = append(lines, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(lines)
	unavailable := len(l.outcomes) - served
	recovery := lastFailure.Sub(backAt)
	t.Logf("%d requests, %d answered 503 (all with Retry-After: %v), no 500; PostgreSQL down %v; last 503 %v after it was back\n  %s",
		len(l.outcomes), unavailable, badRetryAfter == 0, backAt.Sub(stoppedAt).Round(time.Millisecond), recovery.Round(time.Millisecond),
		strings.Join(lines, "\n  "))
	if badRetryAfter > 0 {
		t.Errorf("%d answers 503 without Retry-After", badRetryAfter)
	}
	if unavailable == 0 {
		t.Errorf("no request failed while PostgreSQL was down: the test did not exercise the restart")
	}
	if recovery > 2*time.Second {
		t.Errorf("requests still failed %v after PostgreSQL was back, want it to recover within 2s", recovery)
	}

	// Every acknowledged write is there.
	var contacts int
	if err := storetest.SQL(t, st).QueryRow(ctx, `SELECT count(*) FROM contacts WHERE public_id = ANY($1)`, l.contacts).Scan(&contacts); err != nil {
		t.Fatal(err)
	}
	refs, ids := make([]string, 0, len(l.calls)), make([]string, 0, len(l.calls))
	for ref, id := range l.calls {
		refs, ids = append(refs, ref), append(ids, id)
	}
	var calls, callRows int
	if err := storetest.SQL(t, st).QueryRow(ctx, `SELECT count(*) FILTER (WHERE public_id = ANY($1)), count(*) FROM calls WHERE platform_ref = ANY($2)`,
		ids, refs).Scan(&calls, &callRows); err != nil {
		t.Fatal(err)
	}
	t.Logf("acknowledged writes: %d contacts (%d found), %d call reports (%d found, %d rows; %d sent again)",
		len(l.contacts), contacts, len(l.calls), calls, callRows, len(l.unanswered))
	if contacts != len(l.contacts) {
		t.Errorf("%d of %d contacts answered 201 are missing", len(l.contacts)-contacts, len(l.contacts))
	}
	if calls != len(l.calls) || callRows != len(l.calls) {
		t.Errorf("call reports answered 2xx: %d, found %d by id and %d rows by reference; want all, once", len(l.calls), calls, callRows)
	}
}
