/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/freeport"
)

// startTimeout bounds how long Convoy may take to answer after its processes start.
const startTimeout = 90 * time.Second

// Convoy is a running single-node Convoy: its own PostgreSQL cluster and Redis, the
// control plane (`convoy server`: API, event intake) and the data plane (`convoy agent`:
// the workers that deliver), as Convoy's docker-compose runs them.
type Convoy struct {
	*stack
	Bin     string
	APIURL  string // the server, e.g. http://127.0.0.1:5005
	orgID   string
	userKey string // the bootstrap user's personal API key
	hc      *http.Client
}

// Config is what the benchmark sets beyond Convoy's defaults.
type Config struct {
	// ConsumerPoolSize is the agent's worker count (0: Convoy's default, 100).
	ConsumerPoolSize int
}

// StartConvoy starts PostgreSQL, Redis, runs Convoy's migrations, creates its first user
// and starts `convoy server` and `convoy agent`. It fails, with the tail of their logs,
// when Convoy does not answer within startTimeout.
func StartConvoy(ctx context.Context, bin string, cfg Config) (_ *Convoy, err error) {
	st, err := newStack("switchboard-convoy-")
	if err != nil {
		return nil, err
	}
	c := &Convoy{stack: st, Bin: bin, hc: newAPIClient()}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.startPostgres(ctx, "convoy"); err != nil {
		return nil, err
	}
	redisPort, err := c.startRedis()
	if err != nil {
		return nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freeport.Get(); err != nil {
			return nil, err
		}
	}
	pgURL, err := url.Parse(c.pg.URL("convoy"))
	if err != nil {
		return nil, err
	}
	pgPort, _ := strconv.Atoi(pgURL.Port())
	conf := map[string]any{
		"env": "oss", "host": fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"database": map[string]any{"type": "postgres", "scheme": "postgres", "host": "127.0.0.1", "port": pgPort,
			"username": "postgres", "database": "convoy", "options": "sslmode=disable&connect_timeout=30"},
		"redis": map[string]any{"scheme": "redis", "host": "127.0.0.1", "port": redisPort},
		"server": map[string]any{"http": map[string]any{"port": ports[0], "worker_port": ports[1], "agent_port": ports[2],
			"ingest_port": ports[3]}},
		"logger": map[string]any{"level": "error"},
		// The receiver is on loopback with a certificate of its own, as in our benchmark
		// (there: AllowPrivateTargets and RootCAs). Convoy's community licence ignores a
		// custom CA, so its dispatcher skips verification: still TLS, the same handshake
		// and encryption, one certificate check a connection less.
		"dispatcher": map[string]any{"allow_list": []string{"0.0.0.0/0", "::/0"}, "block_list": []string{},
			"insecure_skip_verify": true, "skip_ping_validation": true},
		"instance_ingest_rate": 1_000_000, "api_rate_limit": 1_000_000,
		"auth": map[string]any{"native": map[string]any{"enabled": true},
			"jwt": map[string]any{"enabled": true, "secret": "bench-jwt-secret", "refresh_secret": "bench-jwt-refresh"}},
		"analytics": map[string]any{"enabled": false},
	}
	if cfg.ConsumerPoolSize > 0 {
		conf["consumer_pool_size"] = cfg.ConsumerPoolSize
	}
	confPath := filepath.Join(c.dir, "convoy.json")
	b, _ := json.MarshalIndent(conf, "", "  ")
	if err := os.WriteFile(confPath, b, 0o600); err != nil {
		return nil, err
	}
	if out, err := c.run(ctx, "migrate", "up", "--config", confPath); err != nil {
		return nil, fmt.Errorf("convoy migrate up: %w\n%s", err, out)
	}
	out, err := c.run(ctx, "bootstrap", "--config", confPath, "--email", "bench@example.com", "--first-name", "Bench",
		"--last-name", "Harness", "--with-api-key", "--format", "json")
	if err != nil {
		return nil, fmt.Errorf("convoy bootstrap: %w\n%s", err, out)
	}
	// The output is log lines (JSON) and then the new user, key included (never printed).
	var boot struct {
		OrganisationID string `json:"organisation_id"`
		APIKey         string `json:"api_key"`
	}
	for dec := json.NewDecoder(bytes.NewReader(out)); boot.APIKey == "" && dec.Decode(&boot) == nil; {
	}
	if boot.APIKey == "" || boot.OrganisationID == "" {
		return nil, errors.New("convoy bootstrap: no organisation and API key in its output")
	}
	c.orgID, c.userKey = boot.OrganisationID, boot.APIKey
	for _, component := range []string{"server", "agent"} {
		if _, err := c.start("convoy "+component, nil, bin, component, "--config", confPath); err != nil {
			return nil, err
		}
	}
	c.APIURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	deadline := time.Now().Add(startTimeout)
	for {
		res, err := c.hc.Get(c.APIURL + "/healthz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if exited := c.exited(); exited != "" || time.Now().After(deadline) {
			if exited == "" {
				exited = fmt.Sprintf("no answer on %s/healthz after %v", c.APIURL, startTimeout)
			}
			return nil, fmt.Errorf("convoy did not come up: %s\nserver log:\n%s\nagent log:\n%s", exited,
				c.logTail("convoy server"), c.logTail("convoy agent"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	return c, nil
}

// Postgres is the connection string of Convoy's database.
func (c *Convoy) Postgres() string { return c.pg.URL("convoy") }

// Stop ends every process StartConvoy started and removes its files.
func (c *Convoy) Stop() { c.stop() }

func (c *Convoy) run(ctx context.Context, args ...string) ([]byte, error) {
	return c.stack.run(ctx, startTimeout, nil, c.Bin, args...)
}

// Project is a Convoy project (outgoing webhooks) and its API key.
type Project struct {
	c   *Convoy
	ID  string
	key string
}

// Endpoint is an endpoint of a project and its owner (the fan-out key).
type Endpoint struct {
	ID      string
	OwnerID string
	Secret  string // the HMAC signing secret
}

// NewProject creates an outgoing project with the settings closest to Switchboard's:
// HMAC-SHA256 signatures (hex), retries on with an exponential schedule starting at a
// minute and as many retries as ours (retries), no rate limit below the benchmark's rates.
func (c *Convoy) NewProject(ctx context.Context, name string, retries int) (*Project, error) {
	var created struct {
		Project struct {
			UID string `json:"uid"`
		} `json:"project"`
		APIKey struct {
			Key string `json:"key"`
		} `json:"api_key"`
	}
	err := c.call(ctx, c.userKey, http.MethodPost, "/api/v1/projects?orgID="+c.orgID, map[string]any{
		"name": name, "type": "outgoing",
		"config": map[string]any{
			"signature": map[string]any{"header": "X-Convoy-Signature",
				"versions": []map[string]any{{"hash": "SHA256", "encoding": "hex"}}},
			"strategy":  map[string]any{"type": "exponential", "duration": 60, "retry_count": retries},
			"ratelimit": map[string]any{"count": 1_000_000, "duration": 1},
		},
	}, &created)
	if err != nil {
		return nil, fmt.Errorf("create project: %w", err)
	}
	return &Project{c: c, ID: created.Project.UID, key: created.APIKey.Key}, nil
}

// NewEndpoint creates an endpoint delivering to url with its own signing secret, owned by
// owner, and a subscription to every event type.
func (p *Project) NewEndpoint(ctx context.Context, name, url, owner string) (*Endpoint, error) {
	var ep struct {
		UID string `json:"uid"`
	}
	secret := "bench-signing-secret-" + name
	err := p.c.call(ctx, p.key, http.MethodPost, "/api/v1/projects/"+p.ID+"/endpoints", map[string]any{
		"name": name, "url": url, "secret": secret, "owner_id": owner,
		"rate_limit": 1_000_000, "rate_limit_duration": 1,
	}, &ep)
	if err != nil {
		return nil, fmt.Errorf("create endpoint: %w", err)
	}
	err = p.c.call(ctx, p.key, http.MethodPost, "/api/v1/projects/"+p.ID+"/subscriptions", map[string]any{
		"name": name + "-all", "endpoint_id": ep.UID, "filter_config": map[string]any{"event_types": []string{"*"}},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("create subscription: %w", err)
	}
	return &Endpoint{ID: ep.UID, OwnerID: owner, Secret: secret}, nil
}

// VerifySignature checks a delivery's X-Convoy-Signature header, "t=<unix>,v1=<hex>" with
// v1 the HMAC-SHA256 of "<unix>,<body>" under the endpoint's secret (Convoy's advanced
// signatures, the default of outgoing projects).
func (ep *Endpoint) VerifySignature(header string, body []byte) error {
	var ts, v1 string
	for _, part := range strings.Split(header, ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			switch k {
			case "t":
				ts = v
			case "v1":
				v1 = v
			}
		}
	}
	mac := hmac.New(sha256.New, []byte(ep.Secret))
	mac.Write([]byte(ts + ","))
	mac.Write(body)
	if ts == "" || !hmac.Equal([]byte(v1), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		return fmt.Errorf("signature %q does not verify", header)
	}
	return nil
}

// SendEvent makes one event through Convoy's ingestion API: to one endpoint (POST
// /events) or, with fanOut, to every endpoint of the owner (POST /events/fanout). id goes
// out in the delivery's X-Service-Delivery header, where the receiver reads it.
func (p *Project) SendEvent(ctx context.Context, hc *http.Client, ep *Endpoint, fanOut bool, id string, data json.RawMessage) error {
	body := map[string]any{"event_type": "call.ended", "data": data, "idempotency_key": id,
		"custom_headers": map[string]string{benchkit.DeliveryHeader: id}}
	path := "/api/v1/projects/" + p.ID + "/events"
	if fanOut {
		body["owner_id"] = ep.OwnerID
		path += "/fanout"
	} else {
		body["endpoint_id"] = ep.ID
	}
	return p.c.do(ctx, hc, p.key, http.MethodPost, path, body, nil)
}

func (c *Convoy) call(ctx context.Context, key, method, path string, body, out any) error {
	return c.do(ctx, c.hc, key, method, path, body, out)
}

// do sends a JSON request and decodes the data of Convoy's {status, message, data} answer.
func (c *Convoy) do(ctx context.Context, hc *http.Client, key, method, path string, body, out any) error {
	if out == nil {
		return callJSON(ctx, hc, key, method, c.APIURL+path, body, nil)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := callJSON(ctx, hc, key, method, c.APIURL+path, body, &env); err != nil {
		return err
	}
	if len(env.Data) == 0 {
		return fmt.Errorf("%s %s: an answer without data", method, path)
	}
	return json.Unmarshal(env.Data, out)
}
