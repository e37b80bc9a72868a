package apiserver_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// logLines captures a logger's lines as JSON objects.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, obj)
	}, funcr.Options{})
}

// withID returns the lines that mention id.
func (l *logLines) withID(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, `"request_id":"`+id+`"`) {
			out = append(out, line)
		}
	}
	return out
}

func TestEveryAnswerHasARequestIDAndOneLogLine(t *testing.T) {
	logs := &logLines{}
	h := newHarness(t, func(c *apiserver.Config) { c.Log = logs.logger() })
	tenant := apitest.NewTenant(t, h.store, plans.Business)

	// A sane id of the caller's is kept and logged with the route template and account.
	resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "GET", "/v1/numbers/nope/routing", nil, http.Header{"X-Request-Id": {"support-ticket-77"}})
	if got := resp.Header.Get("X-Request-Id"); got != "support-ticket-77" {
		t.Fatalf("X-Request-Id = %q, want the caller's", got)
	}
	lines := logs.withID("support-ticket-77")
	if len(lines) != 1 {
		t.Fatalf("want one log line for the request, got %q", lines)
	}
	for _, want := range []string{`"msg":"request"`, `"method":"GET"`, `"route":"/v1/numbers/{number}/routing"`,
		`"status":` + strconv.Itoa(resp.Status), `"account":"` + tenant.Account.PublicID + `"`, `"duration":"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
	if strings.Contains(lines[0], tenant.OwnerKey) || strings.Contains(lines[0], "nope") {
		t.Errorf("log line %s holds the key or the path's id", lines[0])
	}

	// An insane id is replaced by a fresh one; every kind of answer carries an id.
	seen := map[string]bool{}
	for _, c := range []struct{ key, method, path, id string }{
		{tenant.OwnerKey, "GET", "/v1/me", "has space"},
		{tenant.OwnerKey, "GET", "/v1/me", strings.Repeat("x", 201)},
		{"", "GET", "/v1/me", ""},                      // 401
		{tenant.OwnerKey, "GET", "/v1/nope", ""},       // 404 inside /v1
		{tenant.OwnerKey, "GET", "/elsewhere", ""},     // 404 outside every web service
		{tenant.OwnerKey, "DELETE", "/v1/balance", ""}, // 405
		{"", "GET", "/v1/openapi.json", ""},            // anonymous
	} {
		header := http.Header{}
		if c.id != "" {
			header.Set("X-Request-Id", c.id)
		}
		r := h.api.DoUncheckedWithHeaders(t, c.key, c.method, c.path, nil, header)
		got := r.Header.Get("X-Request-Id")
		if got == "" || got == c.id || len(got) > 200 || seen[got] {
			t.Errorf("%s %s with id %q: X-Request-Id = %q, want a fresh one", c.method, c.path, c.id, got)
		}
		seen[got] = true
	}
	if lines := logs.withID("has space"); len(lines) != 0 {
		t.Errorf("an insane id was logged: %q", lines)
	}
}

func TestRateLimitHeadersFollowTheCount(t *testing.T) {
	now := time.Date(2026, 5, 4, 10, 20, 45, 0, time.UTC) // 15 s left in the window
	fake := clocktesting.NewFakeClock(now)
	h := newHarness(t, func(c *apiserver.Config) { c.Clock, c.RequestsPerMinute = fake, 3 })
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	otherKey := apitest.NewKey(t, h.store, tenant.Owner.ID, "read")

	check := func(resp *apitest.Response, status int, remaining string) {
		t.Helper()
		if resp.Status != status {
			t.Fatalf("got %s, want %d", resp, status)
		}
		for name, want := range map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": remaining, "RateLimit-Reset": "15"} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
	}
	check(h.api.Do(t, tenant.OwnerKey, "GET", "/v1/balance", nil), 200, "2")
	// Another key of the same user spends the same budget; an error answer carries it too.
	check(h.api.Do(t, otherKey, "GET", "/v1/numbers/nope", nil), 404, "1")
	check(h.api.Do(t, tenant.OwnerKey, "GET", "/v1/balance", nil), 200, "0")
	limited := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/balance", nil)
	check(limited, 429, "0")
	if got := limited.Header.Get("Retry-After"); got != "15" {
		t.Errorf("Retry-After = %q, want 15", got)
	}
	// The next window starts a fresh budget.
	fake.SetTime(now.Add(15 * time.Second))
	resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/balance", nil)
	if resp.Status != 200 || resp.Header.Get("RateLimit-Remaining") != "2" || resp.Header.Get("RateLimit-Reset") != "60" {
		t.Errorf("next window: %s, headers %v", resp, resp.Header)
	}
	// Answers without a key have no budget to tell.
	if r := h.api.Do(t, "", "GET", "/v1/balance", nil); r.Header.Get("RateLimit-Limit") != "" {
		t.Errorf("401 carries RateLimit-Limit %q", r.Header.Get("RateLimit-Limit"))
	}
}
