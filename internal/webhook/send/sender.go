package send

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/internal/metrics"
)

// Headers of a delivery request.
const (
	HeaderEvent     = "X-Service-Event"
	HeaderDelivery  = "X-Service-Delivery"
	HeaderTimestamp = "X-Service-Timestamp"
	HeaderSignature = "X-Service-Signature"
	UserAgent       = "Service-Webhooks/1"

	// Standard Webhooks (standardwebhooks.com), beside the spec's headers: the event id,
	// the attempt's Unix seconds and SignStandard.
	HeaderStandardID        = "webhook-id"
	HeaderStandardTimestamp = "webhook-timestamp"
	HeaderStandardSignature = "webhook-signature"
)

// DefaultTimeout is the spec's answer time.
const DefaultTimeout = 10 * time.Second

// SenderConfig configures delivery requests.
type SenderConfig struct {
	// Timeout is how long an attempt may take, connect to answer (default 10 s).
	Timeout time.Duration
	// AllowPrivateTargets switches the address guard off. Only for tests and local
	// development with a receiver on this machine; never in production.
	AllowPrivateTargets bool
	// RootCAs, when set, replaces the system roots (tests trust their own CA).
	RootCAs *x509.CertPool
	// Resolver looks endpoint names up at connect time; nil uses net.DefaultResolver.
	Resolver Resolver
	// MaxConnsPerHost bounds connections to one endpoint host (default 16).
	MaxConnsPerHost int
}

// Sender posts signed events.
type Sender struct {
	client  *http.Client
	timeout time.Duration
}

// NewSender builds a sender whose client follows no redirects and dials only permitted
// addresses.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 16
	}
	g := newGuardedDialer(cfg.AllowPrivateTargets, cfg.Resolver)
	tr := &http.Transport{
		DialContext:           g.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		Proxy:                 nil, // never through a proxy: the guard checks the real peer
	}
	return &Sender{
		timeout: cfg.Timeout,
		client: &http.Client{
			Transport: tr,
			Timeout:   cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

// Request is one attempt.
type Request struct {
	URL       string
	Secret    string
	EventType string
	EventID   string
	Body      []byte
	// SentAt is the attempt's time (X-Service-Timestamp), from the injected clock.
	SentAt time.Time
}

// Result is how an attempt went.
type Result struct {
	// OK is true for any 2xx answer.
	OK bool
	// StatusCode is the answer's status; 0 when none arrived.
	StatusCode int
	// Error says why it failed, for people (API last_error); empty when OK.
	Error string
}

// Send makes one attempt. A 3xx is a failure (redirects are not followed); so is any
// answer other than 2xx, a timeout, a refused address and a cancelled ctx.
func (s *Sender) Send(ctx context.Context, r Request) Result {
	ts := r.SentAt.Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return Result{Error: "invalid endpoint address"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderEvent, r.EventType)
	req.Header.Set(HeaderDelivery, r.EventID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(r.Secret, ts, r.Body))
	SetStandardHeaders(req.Header, r.Secret, r.EventID, ts, r.Body)
	resp, err := s.client.Do(req)
	if err != nil {
		countAttempt(ctx, 0, err)
		return Result{Error: s.describe(ctx, err)}
	}
	defer resp.Body.Close()
	countAttempt(ctx, resp.StatusCode, nil)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	res := Result{StatusCode: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		res.OK = true
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Error = fmt.Sprintf("HTTP %d: redirects are not followed", resp.StatusCode)
	default:
		res.Error = fmt.Sprintf("HTTP %d: the endpoint did not answer with a 2xx status", resp.StatusCode)
	}
	return res
}

// SetStandardHeaders adds the Standard Webhooks headers of a delivery of body (event id,
// Unix-seconds timestamp), signed with secret.
func SetStandardHeaders(h http.Header, secret, eventID string, unixSeconds int64, body []byte) {
	h.Set(HeaderStandardID, eventID)
	h.Set(HeaderStandardTimestamp, strconv.FormatInt(unixSeconds, 10))
	if key, ok := StandardKey(secret); ok {
		h.Set(HeaderStandardSignature, SignStandard(key, eventID, unixSeconds, body))
	}
}

// countAttempt adds the attempt to switchboard_webhook_attempts_total.
func countAttempt(ctx context.Context, status int, err error) {
	if class, ok := AttemptClass(ctx, status, err); ok {
		metrics.WebhookAttempt(class)
	}
}

// describe turns a transport error into a short message without internals.
func (s *Sender) describe(ctx context.Context, err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return "refused: the endpoint's address is not on the public internet"
	case ctx.Err() != nil:
		return "cancelled"
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("no answer within %s", s.timeout)
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return "TLS certificate not trusted"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "host name could not be resolved"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return "could not connect"
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}
