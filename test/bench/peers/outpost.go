/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/freeport"
)

// outpostStartTimeout bounds how long Outpost's stack may take to answer: RabbitMQ alone
// takes half a minute to boot on a busy two-core machine.
const outpostStartTimeout = 3 * time.Minute

// OutpostSignatureHeader is where Outpost puts a delivery's signature by default.
const OutpostSignatureHeader = "X-Outpost-Signature"

// Outpost is a running single-node Hookdeck Outpost (github.com/hookdeck/outpost, an
// open-source Go event gateway): its own PostgreSQL cluster (the log store), Redis (tenants,
// destinations, idempotency, retries), RabbitMQ (the delivery and log queues) and its three
// services as separate `outpost-server` processes, as Outpost's docker-compose example runs
// them: api (the publish API), delivery (the workers that send) and log (attempts into
// PostgreSQL).
type Outpost struct {
	*stack
	Bin    string // the `outpost` CLI; `outpost-server` is next to it
	APIURL string // the api service, e.g. http://127.0.0.1:3333
	apiKey string
	hc     *http.Client
}

// OutpostConfig is what the benchmark sets beyond Outpost's defaults.
type OutpostConfig struct {
	// MaxConcurrency is DELIVERY_MAX_CONCURRENCY and LOG_MAX_CONCURRENCY (Outpost's
	// default for both is 1: one delivery at a time).
	MaxConcurrency int
	// CAFile is a PEM bundle of the roots Outpost trusts for deliveries (SSL_CERT_FILE of its
	// processes; empty: the system's).
	CAFile string
	// EventIDHeader is the header that carries the event's id on each delivery (Outpost's
	// default: X-Outpost-Event-Id).
	EventIDHeader string
}

// StartOutpost starts PostgreSQL, Redis and RabbitMQ, applies Outpost's migrations
// (`outpost migrate apply`) and starts the api, delivery and log services. It fails, with
// the tail of their logs, when Outpost does not answer within outpostStartTimeout.
func StartOutpost(ctx context.Context, bin string, cfg OutpostConfig) (_ *Outpost, err error) {
	server := filepath.Join(filepath.Dir(bin), "outpost-server")
	if _, err := os.Stat(server); err != nil {
		return nil, fmt.Errorf("outpost-server is not next to %s (both are built from Outpost's source): %w", bin, err)
	}
	st, err := newStack("switchboard-outpost-")
	if err != nil {
		return nil, err
	}
	o := &Outpost{stack: st, Bin: bin, apiKey: "bench-admin-api-key", hc: newAPIClient()}
	defer func() {
		if err != nil {
			o.Stop()
		}
	}()
	if err := o.startPostgres(ctx, "outpost"); err != nil {
		return nil, err
	}
	redisPort, err := o.startRedis()
	if err != nil {
		return nil, err
	}
	amqpPort, err := o.startRabbitMQ()
	if err != nil {
		return nil, err
	}
	retries := make([]string, len(send.RetryDelays))
	for i, d := range send.RetryDelays {
		retries[i] = strconv.Itoa(int(d.Seconds()))
	}
	env := []string{
		"API_KEY=" + o.apiKey, "API_JWT_SECRET=bench-jwt-secret",
		"AES_ENCRYPTION_SECRET=bench-aes-secret-of-32-bytes-00", // 32 bytes: AES-256
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(redisPort), "REDIS_PASSWORD=", "REDIS_DATABASE=0",
		"POSTGRES_URL=" + o.pg.URL("outpost"),
		fmt.Sprintf("RABBITMQ_SERVER_URL=amqp://guest:guest@127.0.0.1:%d", amqpPort),
		"TOPICS=call.ended",
		// The schedule of Switchboard's retries (the benchmark's receiver never fails).
		"RETRY_SCHEDULE=" + strings.Join(retries, ","),
		"LOG_LEVEL=error",
		// No calls home from a benchmark (and the machine has no way out).
		"DISABLE_TELEMETRY=true",
		// The receiver keys each delivery on this header, as it does Switchboard's.
		"DESTINATIONS_WEBHOOK_EVENT_ID_HEADER_NAME=" + cfg.EventIDHeader,
	}
	if cfg.MaxConcurrency > 0 {
		env = append(env, "DELIVERY_MAX_CONCURRENCY="+strconv.Itoa(cfg.MaxConcurrency),
			"LOG_MAX_CONCURRENCY="+strconv.Itoa(cfg.MaxConcurrency))
	}
	if cfg.CAFile != "" {
		// Go's crypto/x509 reads the roots from SSL_CERT_FILE: Outpost verifies the receiver's
		// certificate as it would a customer's, against the receiver's CA.
		env = append(env, "SSL_CERT_FILE="+cfg.CAFile)
	}
	if out, err := o.run(ctx, outpostStartTimeout, env, bin, "migrate", "apply", "--yes"); err != nil {
		return nil, fmt.Errorf("outpost migrate apply: %w\n%s", err, out)
	}
	// Each service serves /healthz on its API_PORT, so each gets its own.
	for _, service := range []string{"api", "delivery", "log"} {
		port, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		if service == "api" {
			o.APIURL = fmt.Sprintf("http://127.0.0.1:%d", port)
		}
		svcEnv := append(env[:len(env):len(env)], "SERVICE="+service, "API_PORT="+strconv.Itoa(port))
		if _, err := o.start("outpost "+service, svcEnv, server); err != nil {
			return nil, err
		}
		if err := o.waitHealthy(fmt.Sprintf("http://127.0.0.1:%d/healthz", port), "outpost "+service); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// startRabbitMQ starts a RabbitMQ node (and the Erlang port mapper it registers with) on
// free loopback ports, its files in the stack's directory, and returns its AMQP port once
// the node accepts connections.
func (o *Outpost) startRabbitMQ() (int, error) {
	bin := "/usr/lib/rabbitmq/bin/rabbitmq-server" // Debian's; /usr/sbin's wrapper switches to the rabbitmq user
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("rabbitmq-server"); err != nil {
			return 0, fmt.Errorf("rabbitmq-server is not installed (hack/bench/peer.sh installs it): %w", err)
		}
	}
	epmd, err := exec.LookPath("epmd")
	if err != nil {
		return 0, fmt.Errorf("epmd (Erlang) is not installed (rabbitmq-server brings it): %w", err)
	}
	ports := make([]int, 3) // epmd, AMQP, Erlang distribution
	for i := range ports {
		if ports[i], err = freeport.Get(); err != nil {
			return 0, err
		}
	}
	// A port mapper of its own, in the foreground, so that it ends with the benchmark.
	if _, err := o.start("epmd", nil, epmd, "-port", strconv.Itoa(ports[0]), "-address", "127.0.0.1"); err != nil {
		return 0, err
	}
	base := filepath.Join(o.dir, "rabbitmq")
	env := []string{
		"HOME=" + base, // its Erlang cookie
		"ERL_EPMD_PORT=" + strconv.Itoa(ports[0]),
		fmt.Sprintf("RABBITMQ_NODENAME=bench%d@localhost", ports[1]),
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1", "RABBITMQ_NODE_PORT=" + strconv.Itoa(ports[1]),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(ports[2]),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(base, "mnesia"), "RABBITMQ_LOG_BASE=" + filepath.Join(base, "log"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(base, "rabbitmq"), // none: the defaults
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(base, "enabled_plugins"),
		"RABBITMQ_LOGS=-",
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return 0, err
	}
	if _, err := o.start("rabbitmq", env, bin); err != nil {
		return 0, err
	}
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", ports[1]), outpostStartTimeout); err != nil {
		return 0, fmt.Errorf("rabbitmq: %w\n%s", err, o.logTail("rabbitmq"))
	}
	return ports[1], nil
}

func (o *Outpost) waitHealthy(url, name string) error {
	deadline := time.Now().Add(outpostStartTimeout)
	for {
		res, err := o.hc.Get(url)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if exited := o.exited(); exited != "" || time.Now().After(deadline) {
			if exited == "" {
				exited = fmt.Sprintf("no answer on %s after %v", url, outpostStartTimeout)
			}
			return fmt.Errorf("%s did not come up: %s\nlog:\n%s", name, exited, o.logTail(name))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Postgres is the connection string of Outpost's database.
func (o *Outpost) Postgres() string { return o.pg.URL("outpost") }

// CountPostgres counts Outpost's PostgreSQL server among the benchmark's processes.
func (o *Outpost) CountPostgres() error { return o.countPostgres() }

// Stop ends every process StartOutpost started and removes its files.
func (o *Outpost) Stop() { o.stop() }

// OutpostTenant is an Outpost tenant: the owner of destinations, and the fan-out key.
type OutpostTenant struct {
	o  *Outpost
	ID string
}

// OutpostDestination is a webhook destination of a tenant.
type OutpostDestination struct {
	ID     string
	Secret string // the HMAC signing secret
}

// NewTenant creates (PUT) a tenant.
func (o *Outpost) NewTenant(ctx context.Context, id string) (*OutpostTenant, error) {
	if err := o.do(ctx, o.hc, http.MethodPut, "/api/v1/tenants/"+id, map[string]any{}, nil); err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	return &OutpostTenant{o: o, ID: id}, nil
}

// NewDestination creates a webhook destination of the tenant delivering to url, subscribed
// to every topic, with its own signing secret.
func (t *OutpostTenant) NewDestination(ctx context.Context, name, url string) (*OutpostDestination, error) {
	secret := "bench-signing-secret-" + name
	var created struct {
		ID string `json:"id"`
	}
	err := t.o.do(ctx, t.o.hc, http.MethodPost, "/api/v1/tenants/"+t.ID+"/destinations", map[string]any{
		"type": "webhook", "topics": []string{"*"},
		"config": map[string]any{"url": url}, "credentials": map[string]any{"secret": secret},
	}, &created)
	if err != nil {
		return nil, fmt.Errorf("create destination: %w", err)
	}
	if created.ID == "" {
		return nil, errors.New("create destination: no id in the answer")
	}
	return &OutpostDestination{ID: created.ID, Secret: secret}, nil
}

// VerifySignature checks a delivery's X-Outpost-Signature header, "v0=<hex>[,<hex>...]"
// with one HMAC-SHA256 of the body per valid secret (Outpost's default signing; two during
// a secret's rotation).
func (d *OutpostDestination) VerifySignature(header string, body []byte) error {
	sigs, ok := strings.CutPrefix(header, "v0=")
	if ok {
		mac := hmac.New(sha256.New, []byte(d.Secret))
		mac.Write(body)
		want := []byte(hex.EncodeToString(mac.Sum(nil)))
		for _, sig := range strings.Split(sigs, ",") {
			if hmac.Equal([]byte(sig), want) {
				return nil
			}
		}
	}
	return fmt.Errorf("signature %q does not verify", header)
}

// Publish makes one event through Outpost's publish API (POST /api/v1/publish), with id as
// the event's id: to one destination or, with fanOut, to every destination of the tenant
// subscribed to its topic. Retries are on (eligible_for_retry).
func (t *OutpostTenant) Publish(ctx context.Context, hc *http.Client, dest *OutpostDestination, fanOut bool, id string,
	data json.RawMessage) error {
	body := map[string]any{"id": id, "tenant_id": t.ID, "topic": "call.ended", "eligible_for_retry": true, "data": data}
	if !fanOut {
		body["destination_id"] = dest.ID
	}
	var res struct {
		DestinationIDs []string `json:"destination_ids"`
	}
	if err := t.o.do(ctx, hc, http.MethodPost, "/api/v1/publish", body, &res); err != nil {
		return err
	}
	if len(res.DestinationIDs) == 0 {
		return fmt.Errorf("publish %s: no destination matched", id)
	}
	return nil
}

// do sends a JSON request with the admin API key and decodes the answer into out.
func (o *Outpost) do(ctx context.Context, hc *http.Client, method, path string, body, out any) error {
	return callJSON(ctx, hc, o.apiKey, method, o.APIURL+path, body, out)
}

// WriteReceiverCA writes the certificate of benchkit's receivers (every httptest TLS server
// presents the same one) as a PEM file in dir, for a peer to trust.
func WriteReceiverCA(dir string) (string, error) {
	rcv := benchkit.NewReceiver()
	defer rcv.Srv.Close()
	path := filepath.Join(dir, "receiver-ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Srv.Certificate().Raw})
	return path, os.WriteFile(path, cert, 0o600)
}
