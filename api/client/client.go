// Package client is a typed Go client of the Switchboard v1 API. client.gen.go is generated
// by oapi-codegen from api/openapi/v1.json (make generate); this file wraps it with the API
// key, retries and the caller's rate-limit budget.
//
//	api, err := client.New("https://api.switchboard.example/v1", os.Getenv("SWITCHBOARD_API_KEY"), client.Options{})
//	me, err := api.GetMeWithResponse(ctx)
//	fmt.Println(me.JSON200.Tenant.Name, api.LastRateLimit().Remaining)
package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// IdempotencyKeyHeader is the header a POST carries its idempotency key in.
const IdempotencyKeyHeader = "Idempotency-Key"

// Options configure New; the zero value is usable.
type Options struct {
	// HTTPClient sends the requests; default a client with a 30 s timeout.
	HTTPClient *http.Client
	// MaxRetries is how often one request is retried after a 429, a 503 with Retry-After, or
	// a transient network error; default 3. Negative: never.
	MaxRetries int
	// MaxRetryWait is the longest Retry-After waited for; a longer one returns the 429 to
	// the caller. Default 60 s (the API's limits are per minute).
	MaxRetryWait time.Duration
	// IdempotencyKey, when set, gives each POST a key that is sent again, unchanged, on each
	// retry of that POST; POSTs are then retried after network errors too (without a key
	// they are not: the first attempt may have done the work). This is the hook for the
	// API's Idempotency-Key (issue 15 part 3), e.g. uuid.NewString.
	IdempotencyKey func() string
	// Clock waits between retries; default the real clock.
	Clock clock.Clock
}

// API is the generated client with the key, retries and the last rate-limit budget seen.
type API struct {
	*ClientWithResponses
	doer *retryingDoer
}

// New returns a client of the API at baseURL (ending in /v1) acting with apiKey.
func New(baseURL, apiKey string, opts Options) (*API, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 3
	}
	if opts.MaxRetryWait == 0 {
		opts.MaxRetryWait = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	d := &retryingDoer{opts: opts}
	c, err := NewClientWithResponses(baseURL, WithHTTPClient(d),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+apiKey)
			if req.Method == http.MethodPost && opts.IdempotencyKey != nil && req.Header.Get(IdempotencyKeyHeader) == "" {
				req.Header.Set(IdempotencyKeyHeader, opts.IdempotencyKey())
			}
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return &API{ClientWithResponses: c, doer: d}, nil
}

// RateLimit is the caller's budget as the last answer told it.
type RateLimit struct {
	// Limit is the requests allowed per minute for the key's user.
	Limit int
	// Remaining is the requests left in the current minute.
	Remaining int
	// Reset is the time until the budget is renewed.
	Reset time.Duration
}

// RateLimitOf reads the RateLimit-* headers of an answer; ok is false when it has none
// (answers to requests without a valid key).
func RateLimitOf(h http.Header) (rl RateLimit, ok bool) {
	limit, err1 := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("RateLimit-Remaining"))
	reset, err3 := strconv.Atoi(h.Get("RateLimit-Reset"))
	if err1 != nil || err2 != nil || err3 != nil {
		return RateLimit{}, false
	}
	return RateLimit{Limit: limit, Remaining: remaining, Reset: time.Duration(reset) * time.Second}, true
}

// LastRateLimit is the budget of the latest answer that carried one (zero before any).
func (a *API) LastRateLimit() RateLimit {
	a.doer.mu.Lock()
	defer a.doer.mu.Unlock()
	return a.doer.last
}

// retryingDoer sends a request again after a 429 (or a 503 that says when to retry) once
// Retry-After has passed, and after transient network errors when resending is safe.
type retryingDoer struct {
	opts Options
	mu   sync.Mutex
	last RateLimit
}

func (d *retryingDoer) Do(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		resp, err := d.opts.HTTPClient.Do(req)
		if err != nil {
			if attempt >= d.opts.MaxRetries || !safeToResend(req) || req.Context().Err() != nil || !transient(err) {
				return nil, err
			}
			if err := d.wait(req.Context(), backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		if rl, ok := RateLimitOf(resp.Header); ok {
			d.mu.Lock()
			d.last = rl
			d.mu.Unlock()
		}
		wait, retry := retryAfter(resp)
		if !retry || attempt >= d.opts.MaxRetries || wait > d.opts.MaxRetryWait ||
			(resp.StatusCode != http.StatusTooManyRequests && !safeToResend(req)) {
			return resp, nil
		}
		// A 429 is refused before any work is done, so even a POST is resent.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err := d.wait(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// retryAfter is how long an answer asks the client to wait before trying again: a 429 or a
// 503 with Retry-After in seconds.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		if resp.StatusCode == http.StatusTooManyRequests {
			return time.Second, true
		}
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// safeToResend: methods that are idempotent, and POSTs that carry an idempotency key.
func safeToResend(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return req.Header.Get(IdempotencyKeyHeader) != ""
}

// transient reports network errors worth another try: refused or reset connections, a
// connection closed mid-answer, timeouts of a single attempt.
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &ne) && ne.Timeout())
}

// backoff is the wait before the next attempt after a network error: 200 ms, 400 ms, 800 ms...
func backoff(attempt int) time.Duration {
	return 200 * time.Millisecond << attempt
}

func (d *retryingDoer) wait(ctx context.Context, dur time.Duration) error {
	if dur <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-d.opts.Clock.After(dur):
		return nil
	}
}
