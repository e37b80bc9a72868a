/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/freeport"
)

// svixStartTimeout bounds how long Svix's migrations and its first answer may take.
const svixStartTimeout = 3 * time.Minute

// SvixEventType is the event type every benchmark message has and every endpoint subscribes to.
const SvixEventType = "call.ended"

// Svix is a running single-node Svix server (github.com/svix/svix-webhooks, server/: the
// open-source Rust webhooks service), as its docker-compose runs it: its own PostgreSQL
// cluster, a Redis (the task queue) and one `svix-server` process that serves the API and
// runs the workers that send.
type Svix struct {
	*stack
	Bin    string // svix-server
	APIURL string // e.g. http://127.0.0.1:8071
	token  string // a JWT of Svix's default organisation
	hc     *http.Client
}

// SvixConfig is what the benchmark sets beyond Svix's defaults.
type SvixConfig struct {
	// CAFile is a PEM bundle of the roots Svix trusts for deliveries (SSL_CERT_FILE: Svix
	// sends with OpenSSL, which reads its default roots from there; empty: the system's).
	CAFile string
}

// StartSvix starts PostgreSQL and Redis, applies Svix's migrations (`svix-server migrate`),
// starts `svix-server`, makes an API token (`svix-server jwt generate`) and the event type
// SvixEventType. It fails, with the tail of the server's log, when Svix does not answer
// within svixStartTimeout.
func StartSvix(ctx context.Context, bin string, cfg SvixConfig) (_ *Svix, err error) {
	st, err := newStack("switchboard-svix-")
	if err != nil {
		return nil, err
	}
	s := &Svix{stack: st, Bin: bin, hc: newAPIClient()}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := s.startPostgres(ctx, "svix"); err != nil {
		return nil, err
	}
	redisPort, err := s.startRedis()
	if err != nil {
		return nil, err
	}
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	s.APIURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	retries := make([]string, len(send.RetryDelays))
	for i, d := range send.RetryDelays {
		retries[i] = strconv.Itoa(int(d.Seconds()))
	}
	// Svix reads its configuration from SVIX_* (config.default.toml names). Its defaults
	// otherwise: the Redis queue, an in-memory cache (its recommendation for one API
	// instance), 100 PostgreSQL and 100 Redis connections, at most 500 worker tasks at once
	// (more than Convoy's 100 consumers and Outpost's 100 here: nothing to raise), HMAC-SHA256
	// endpoint secrets.
	env := []string{
		"SVIX_LISTEN_ADDRESS=127.0.0.1:" + strconv.Itoa(port),
		"SVIX_JWT_SECRET=bench-jwt-secret-0123456789abcdef",
		"SVIX_DB_DSN=" + s.pg.URL("svix"),
		"SVIX_REDIS_DSN=" + fmt.Sprintf("redis://127.0.0.1:%d", redisPort),
		"SVIX_QUEUE_TYPE=redis",
		// The schedule of Switchboard's retries (the benchmark's receiver never fails).
		"SVIX_RETRY_SCHEDULE=" + strings.Join(retries, ","),
		// Warnings and errors only: SVIX_LOG_LEVEL goes no lower than info, RUST_LOG (which
		// takes its place) does. Svix has no telemetry of its own; traces (OpenTelemetry) and
		// error reports (Sentry) are off while their addresses are unset, as here.
		"RUST_LOG=warn",
		// Its SSRF guard blocks private and loopback addresses; the receiver is on loopback.
		"SVIX_WHITELIST_SUBNETS=[127.0.0.1/32]",
	}
	if cfg.CAFile != "" {
		// Svix's webhook client is OpenSSL with its default roots, which OpenSSL reads from
		// SSL_CERT_FILE: Svix verifies the receiver's certificate as it would a customer's.
		env = append(env, "SSL_CERT_FILE="+cfg.CAFile)
	}
	if out, err := s.run(ctx, svixStartTimeout, env, bin, "migrate"); err != nil {
		return nil, fmt.Errorf("svix-server migrate: %w\n%s", err, out)
	}
	out, err := s.run(ctx, time.Minute, env, bin, "jwt", "generate")
	if err != nil {
		return nil, fmt.Errorf("svix-server jwt generate: %w\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "Token (Bearer): "); ok {
			s.token = t
		}
	}
	if s.token == "" {
		return nil, fmt.Errorf("svix-server jwt generate printed no token: %s", out)
	}
	if _, err := s.start("svix-server", env, bin); err != nil {
		return nil, err
	}
	if err := s.waitHealthy(); err != nil {
		return nil, err
	}
	if err := s.do(ctx, s.hc, http.MethodPost, "/api/v1/event-type", map[string]any{
		"name": SvixEventType, "description": "A call ended",
	}, nil); err != nil {
		return nil, fmt.Errorf("create event type: %w", err)
	}
	return s, nil
}

func (s *Svix) waitHealthy() error {
	url := s.APIURL + "/api/v1/health/ping"
	deadline := time.Now().Add(svixStartTimeout)
	for {
		res, err := s.hc.Get(url)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode/100 == 2 {
				return nil
			}
		}
		if exited := s.exited(); exited != "" || time.Now().After(deadline) {
			if exited == "" {
				exited = fmt.Sprintf("no answer on %s after %v", url, svixStartTimeout)
			}
			return fmt.Errorf("svix-server did not come up: %s\nlog:\n%s", exited, s.logTail("svix-server"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// CountPostgres counts Svix's PostgreSQL server among the benchmark's processes.
func (s *Svix) CountPostgres() error { return s.countPostgres() }

// Stop ends every process StartSvix started and removes its files.
func (s *Svix) Stop() { s.stop() }

// SvixApp is a Svix application: the owner of endpoints, to which messages are sent; a
// message reaches every endpoint of the application subscribed to its event type.
type SvixApp struct {
	s  *Svix
	ID string
}

// SvixEndpoint is an endpoint of an application.
type SvixEndpoint struct {
	ID     string
	Secret string // whsec_<base64 key>
}

// NewApp creates an application.
func (s *Svix) NewApp(ctx context.Context, name string) (*SvixApp, error) {
	var created struct {
		ID string `json:"id"`
	}
	if err := s.do(ctx, s.hc, http.MethodPost, "/api/v1/app", map[string]any{"name": name}, &created); err != nil {
		return nil, fmt.Errorf("create application: %w", err)
	}
	if created.ID == "" {
		return nil, errors.New("create application: no id in the answer")
	}
	return &SvixApp{s: s, ID: created.ID}, nil
}

// NewEndpoint creates an endpoint of the application delivering to url, subscribed to
// SvixEventType, with a signing secret of its own (24 random bytes, Svix's size).
func (app *SvixApp) NewEndpoint(ctx context.Context, url string) (*SvixEndpoint, error) {
	key := make([]byte, 24)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	var created struct {
		ID string `json:"id"`
	}
	err := app.s.do(ctx, app.s.hc, http.MethodPost, "/api/v1/app/"+app.ID+"/endpoint", map[string]any{
		"url": url, "version": 1, "filterTypes": []string{SvixEventType}, "secret": secret,
	}, &created)
	if err != nil {
		return nil, fmt.Errorf("create endpoint: %w", err)
	}
	if created.ID == "" {
		return nil, errors.New("create endpoint: no id in the answer")
	}
	return &SvixEndpoint{ID: created.ID, Secret: secret}, nil
}

// Send makes one message (POST /api/v1/app/{app}/msg) of SvixEventType with payload, id
// as its eventId (Svix's id of the sender's choosing, unique in the application), and
// returns Svix's message id, which its deliveries carry in svix-id. The answer leaves out
// the payload (with_content=false: the sender has it).
func (app *SvixApp) Send(ctx context.Context, hc *http.Client, id string, payload json.RawMessage) (string, error) {
	var res struct {
		ID string `json:"id"`
	}
	if err := app.s.do(ctx, hc, http.MethodPost, "/api/v1/app/"+app.ID+"/msg?with_content=false", map[string]any{
		"eventId": id, "eventType": SvixEventType, "payload": payload,
	}, &res); err != nil {
		return "", err
	}
	if res.ID == "" {
		return "", fmt.Errorf("message %s: no id in the answer", id)
	}
	return res.ID, nil
}

// VerifySignature checks a delivery's svix-signature header: space-separated "v1,<base64>"
// signatures, one of which must be the HMAC-SHA256, keyed with the endpoint's secret
// (base64 after "whsec_"), of "{svix-id}.{svix-timestamp}.{body}".
func (e *SvixEndpoint) VerifySignature(h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(e.Secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("endpoint secret: %w", err)
	}
	msgID, ts := h.Get("svix-id"), h.Get("svix-timestamp")
	if msgID == "" || ts == "" {
		return fmt.Errorf("svix-id %q or svix-timestamp %q missing", msgID, ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + ts + "."))
	mac.Write(body)
	want := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	for _, sig := range strings.Fields(h.Get("svix-signature")) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), want) {
			return nil
		}
	}
	return fmt.Errorf("signature %q does not verify", h.Get("svix-signature"))
}

// SvixEventID finds the event's id in a Svix delivery: Svix sends its own message id
// (svix-id) and no header of the sender's choosing, and it sends the payload as given, whose
// top-level "id" is the event's id (callEnded). "" for a request that is not a delivery.
func SvixEventID(h http.Header, body []byte) string {
	if h.Get("svix-id") == "" {
		return ""
	}
	var p struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.ID
}

// do sends a JSON request with the API token and decodes the answer into out.
func (s *Svix) do(ctx context.Context, hc *http.Client, method, path string, body, out any) error {
	return callJSON(ctx, hc, s.token, method, s.APIURL+path, body, out)
}
