package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/api/client"
)

// recorder is a real HTTP server answering from a script, one answer per request.
type recorder struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	script   []func(w http.ResponseWriter)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.requests)
	r.requests = append(r.requests, req)
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	if n < len(r.script) {
		r.script[n](w)
		return
	}
	okMe(w)
}

func tooMany(retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", retryAfter)
		budget(w, "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"message":"Too many requests."}`)
	}
}

func budget(w http.ResponseWriter, remaining string) {
	w.Header().Set("RateLimit-Limit", "60")
	w.Header().Set("RateLimit-Remaining", remaining)
	w.Header().Set("RateLimit-Reset", "42")
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func okMe(w http.ResponseWriter) {
	budget(w, "57")
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"message":"ok"}`)
}

func newAPI(t *testing.T, rec *recorder, opts client.Options) *client.API {
	t.Helper()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	api, err := client.New(srv.URL+"/v1", "sbk_test", opts)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

func TestRetries429AfterRetryAfterWithTheSameBodyAndKey(t *testing.T) {
	rec := &recorder{script: []func(http.ResponseWriter){tooMany("1")}}
	keys := 0
	api := newAPI(t, rec, client.Options{IdempotencyKey: func() string { keys++; return "key-" + string(rune('0'+keys)) }})
	start := time.Now()
	resp, err := api.CreateContactWithResponse(context.Background(), nil, client.ContactWrite{DisplayName: "Ada", Phones: []client.ContactPhoneWrite{}})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %v, before Retry-After", waited)
	}
	if resp.StatusCode() != 200 || len(rec.requests) != 2 {
		t.Fatalf("status %d after %d requests, want 200 after 2", resp.StatusCode(), len(rec.requests))
	}
	if rec.bodies[0] == "" || rec.bodies[0] != rec.bodies[1] {
		t.Errorf("bodies differ: %q, %q", rec.bodies[0], rec.bodies[1])
	}
	k0, k1 := rec.requests[0].Header.Get("Idempotency-Key"), rec.requests[1].Header.Get("Idempotency-Key")
	if k0 != "key-1" || k1 != k0 {
		t.Errorf("Idempotency-Key %q then %q, want one key on both attempts", k0, k1)
	}
	if got := rec.requests[1].Header.Get("Authorization"); got != "Bearer sbk_test" {
		t.Errorf("Authorization = %q", got)
	}
	if rl := api.LastRateLimit(); rl != (client.RateLimit{Limit: 60, Remaining: 57, Reset: 42 * time.Second}) {
		t.Errorf("LastRateLimit = %+v", rl)
	}
}

func TestGivesUpOnLongRetryAfterAndAfterMaxRetries(t *testing.T) {
	rec := &recorder{script: []func(http.ResponseWriter){tooMany("3600")}}
	api := newAPI(t, rec, client.Options{})
	resp, err := api.GetMeWithResponse(context.Background())
	if err != nil || resp.StatusCode() != 429 || len(rec.requests) != 1 {
		t.Fatalf("err %v, status %v after %d requests: want the 429 at once", err, resp.StatusCode(), len(rec.requests))
	}

	rec = &recorder{script: []func(http.ResponseWriter){tooMany("0"), tooMany("0"), tooMany("0")}}
	api = newAPI(t, rec, client.Options{MaxRetries: 2})
	resp, err = api.GetMeWithResponse(context.Background())
	if err != nil || resp.StatusCode() != 429 || len(rec.requests) != 3 {
		t.Fatalf("err %v, status %v after %d requests: want the 429 after 3", err, resp.StatusCode(), len(rec.requests))
	}
}

func TestRetriesNetworkErrorsOnlyWhenResendingIsSafe(t *testing.T) {
	// GET is resent after the connection drops.
	rec := &recorder{script: []func(http.ResponseWriter){hangUp}}
	api := newAPI(t, rec, client.Options{})
	if resp, err := api.GetMeWithResponse(context.Background()); err != nil || resp.StatusCode() != 200 || len(rec.requests) != 2 {
		t.Fatalf("GET: err %v after %d requests", err, len(rec.requests))
	}
	// A POST without an idempotency key is not: the first attempt may have done the work.
	rec = &recorder{script: []func(http.ResponseWriter){hangUp}}
	api = newAPI(t, rec, client.Options{})
	if _, err := api.MarkAllNotificationsReadWithResponse(context.Background(), nil); err == nil || len(rec.requests) != 1 {
		t.Fatalf("POST without a key: err %v after %d requests, want the error after 1", err, len(rec.requests))
	}
	// With a key it is, with the same key.
	rec = &recorder{script: []func(http.ResponseWriter){hangUp}}
	api = newAPI(t, rec, client.Options{IdempotencyKey: func() string { return time.Now().String() }})
	if _, err := api.MarkAllNotificationsReadWithResponse(context.Background(), nil); err != nil || len(rec.requests) != 2 {
		t.Fatalf("POST with a key: err %v after %d requests", err, len(rec.requests))
	}
	if a, b := rec.requests[0].Header.Get("Idempotency-Key"), rec.requests[1].Header.Get("Idempotency-Key"); a == "" || a != b {
		t.Errorf("Idempotency-Key %q then %q", a, b)
	}
}

func TestRateLimitOf(t *testing.T) {
	cases := map[string]struct {
		limit, remaining, reset string
		want                    client.RateLimit
		ok                      bool
	}{
		"all three":    {"60", "0", "15", client.RateLimit{Limit: 60, Remaining: 0, Reset: 15 * time.Second}, true},
		"none":         {"", "", "", client.RateLimit{}, false},
		"one missing":  {"60", "", "15", client.RateLimit{}, false},
		"not a number": {"60", "many", "15", client.RateLimit{}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range map[string]string{"RateLimit-Limit": c.limit, "RateLimit-Remaining": c.remaining, "RateLimit-Reset": c.reset} {
				if v != "" {
					h.Set(k, v)
				}
			}
			got, ok := client.RateLimitOf(h)
			if got != c.want || ok != c.ok {
				t.Errorf("RateLimitOf = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
