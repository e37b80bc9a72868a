package listen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/listen"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	os.Exit(m.Run())
}

// output is what listen printed, safe to read while it runs.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// localReceiver is a developer's receiver on loopback: it verifies every request with the
// secret listen printed, with api/webhookverify (X-Service-*) and with the official Standard
// Webhooks library (webhook-*), and answers 202 to what verifies under both.
type localReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []received
	bad    []string
}

type received struct {
	header http.Header
	body   []byte
}

func newLocalReceiver(t *testing.T) *localReceiver {
	lr := &localReceiver{}
	lr.srv = httptest.NewServer(http.HandlerFunc(lr.serve))
	t.Cleanup(lr.srv.Close)
	return lr
}

func (lr *localReceiver) setSecret(s string) {
	lr.mu.Lock()
	lr.secret = s
	lr.mu.Unlock()
}

func (lr *localReceiver) serve(w http.ResponseWriter, r *http.Request) {
	lr.mu.Lock()
	secret := lr.secret
	lr.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	if err == nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		_, err = (&webhookverify.Verifier{Secret: secret}).Request(r)
	}
	if err == nil {
		var wh *standardwebhooks.Webhook
		if wh, err = standardwebhooks.NewWebhook(secret); err == nil {
			err = wh.Verify(body, r.Header)
		}
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if err != nil {
		lr.bad = append(lr.bad, err.Error())
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	lr.got = append(lr.got, received{header: r.Header.Clone(), body: body})
	w.WriteHeader(http.StatusAccepted)
}

// byCall is the request carrying callID's event, if one came.
func (lr *localReceiver) byCall(callID string) (received, bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for _, g := range lr.got {
		var p struct {
			Call struct {
				ID string `json:"id"`
			} `json:"call"`
		}
		if json.Unmarshal(g.body, &p) == nil && p.Call.ID == callID {
			return g, true
		}
	}
	return received{}, false
}

// service is one `switchboard serve` with the live channel on, and the demo account.
type service struct {
	env  *servetest.Env
	bin  string
	r    *servetest.Replica
	demo servetest.Demo
	base string
}

func startService(t *testing.T) *service {
	t.Helper()
	bin := servetest.BuildCurrent(t, t.TempDir())
	e := servetest.Start(t)
	secretFile := filepath.Join(e.Dir, "realtime-secret")
	if err := os.WriteFile(secretFile, []byte("a live channel secret for the listen tests"), 0o600); err != nil {
		t.Fatal(err)
	}
	demo := e.SeedDemo(t, bin)
	r := e.StartReplica(t, bin, "listen", "listen-test", "--realtime-secret-file="+secretFile)
	return &service{env: e, bin: bin, r: r, demo: demo, base: "http://" + r.API + "/v1"}
}

// run runs the built binary and returns its exit code, standard output and error.
func (s *service) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

func waitForText(t *testing.T, out *output, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	var m []string
	servetest.WaitFor(t, "listen to print "+re.String(), timeout, func() bool {
		m = re.FindStringSubmatch(out.String())
		return m != nil
	})
	return m
}

// listen forwards the account's events to a local receiver with the body and the signatures
// of a real delivery, keeps its secret across restarts, and reconnects after the server restarts.
func TestListenForwardsSignedEvents(t *testing.T) {
	s := startService(t)
	number := servetest.LiveNumber(t, s.r)
	// A real endpoint gets the same events, to compare what listen sends with a delivery.
	_, inbox := s.env.CreateEndpoint(t, s.r, s.demo.OwnerKey, "real")
	lr := newLocalReceiver(t)
	configDir := t.TempDir()

	start := func() (*output, func() error) {
		out := &output{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- listen.Listen(ctx, listen.Options{APIBase: "http://" + s.r.API, Key: s.demo.OwnerKey,
				ForwardTo: lr.srv.URL + "/hooks", ConfigDir: configDir, Out: out, MaxBackoff: 2 * time.Second})
		}()
		stop := sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() { _ = stop() })
		return out, stop
	}
	out, stop := start()
	secret := waitForText(t, out, regexp.MustCompile(`Signing secret (whsec_\S+)`), time.Minute)[1]
	lr.setSecret(secret)
	waitForText(t, out, regexp.MustCompile(`Ready: listening on private-account\.`), time.Minute)

	callID := servetest.ReportCall(t, s.r, servetest.UniqueRef("listen", 0), number)
	var got received
	servetest.WaitFor(t, "the local receiver to get the call's call.ended", time.Minute, func() bool {
		var ok bool
		got, ok = lr.byCall(callID)
		return ok
	})
	eventID := got.header.Get("X-Service-Delivery")
	if got.header.Get("X-Service-Event") != "call.ended" || got.header.Get("webhook-id") != eventID || eventID == "" {
		t.Fatalf("headers of the forwarded event: %v", got.header)
	}
	line := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  call\.ended  ` + regexp.QuoteMeta(eventID) + `  -> 202 in \d+`)
	waitForText(t, out, line, 10*time.Second)

	// The real delivery of the same event: the same body, byte for byte.
	var real servetest.Delivery
	servetest.WaitFor(t, "the real endpoint's delivery", time.Minute, func() bool {
		for _, d := range inbox.Deliveries() {
			if d.EventID == eventID {
				real = d
				return true
			}
		}
		return false
	})
	if !bytes.Equal(real.Body, got.body) {
		t.Errorf("listen forwarded\n%s\na real delivery carried\n%s", got.body, real.Body)
	}
	for _, h := range []string{"Content-Type", "User-Agent", "X-Service-Event", "X-Service-Delivery", "X-Service-Timestamp",
		"X-Service-Signature", "webhook-id", "webhook-timestamp", "webhook-signature"} {
		if got.header.Get(h) == "" {
			t.Errorf("the forwarded request lacks %s: %v", h, got.header)
		}
	}

	// The server restarts: listen says so, reconnects and forwards the next event.
	s.r = s.env.Restart(t, s.r)
	waitForText(t, out, regexp.MustCompile(`Lost the live channel \(.*\); reconnecting in \d`), time.Minute)
	waitForText(t, out, regexp.MustCompile(`Reconnected to the live channel`), 2*time.Minute)
	second := servetest.ReportCall(t, s.r, servetest.UniqueRef("listen", 1), number)
	servetest.WaitFor(t, "the call reported after the restart", time.Minute, func() bool { _, ok := lr.byCall(second); return ok })

	// A new run on this machine with this key signs with the same secret.
	if err := stop(); err != nil {
		t.Fatalf("listen ended with %v", err)
	}
	again, _ := start()
	if s2 := waitForText(t, again, regexp.MustCompile(`Signing secret (whsec_\S+)`), time.Minute)[1]; s2 != secret {
		t.Errorf("the secret changed between runs: %s, then %s", secret, s2)
	}
	for _, text := range []string{out.String(), again.String()} {
		if strings.Contains(text, s.demo.OwnerKey) {
			t.Errorf("listen printed the API key:\n%s", text)
		}
	}
	t.Logf("listen printed:\n%s", out)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if len(lr.bad) != 0 {
		t.Errorf("requests that did not verify: %v", lr.bad)
	}
}

// A key that may not see webhooks, and an account without Integrations, get one line with
// the API's message and a non-zero exit; trigger sends the test event through the API.
func TestListenRefusalsAndTrigger(t *testing.T) {
	s := startService(t)
	lr := newLocalReceiver(t)
	api := []string{"--api-base", s.base}

	code, stdout, stderr := s.run(t, append([]string{"listen", "--key", s.demo.MemberKey, "--forward-to", lr.srv.URL}, api...)...)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "403") || !strings.Contains(stderr, "This key lacks the webhooks:manage permission.") {
		t.Errorf("listen with a member's read-only key: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, s.demo.MemberKey) {
		t.Errorf("listen printed the API key")
	}

	created := s.env.Run(t, s.bin, "admin", "create-account", "--name", "No Integrations Ltd", "--plan", "starter",
		"--owner-name", "Ada", "--owner-email", "ada@example.com")
	starterKey := regexp.MustCompile(`key (sbk_[\w-]+)`).FindStringSubmatch(created)
	if starterKey == nil {
		t.Fatalf("create-account printed no key:\n%s", created)
	}
	code, stdout, stderr = s.run(t, append([]string{"listen", "--key", starterKey[1], "--forward-to", lr.srv.URL}, api...)...)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "403") ||
		!strings.Contains(stderr, "Integrations") {
		t.Errorf("listen on an account without Integrations: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}

	ep, inbox := s.env.CreateEndpoint(t, s.r, s.demo.OwnerKey, "trigger")
	code, stdout, stderr = s.run(t, append([]string{"trigger", "test", "--endpoint", ep.PublicID, "--key", s.demo.OwnerKey}, api...)...)
	if code != 0 || !strings.Contains(stdout, `202 {"queued":true}`) {
		t.Fatalf("trigger test: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	servetest.WaitFor(t, "the test delivery at the endpoint", time.Minute, func() bool {
		for _, d := range inbox.Deliveries() {
			var p struct {
				Event string `json:"event"`
				Test  bool   `json:"test"`
			}
			if json.Unmarshal(d.Body, &p) == nil && p.Event == "test" && p.Test {
				return true
			}
		}
		return false
	})

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"trigger", "test", "--endpoint", "we_nosuchendpoint"}, "404"},
		{[]string{"trigger", "call.ended", "--endpoint", ep.PublicID}, `one event on request, "test"`},
	} {
		code, stdout, stderr := s.run(t, append(append(bad.args, "--key", s.demo.OwnerKey), api...)...)
		if code == 0 || !strings.Contains(stderr, bad.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q, want one line with %q", bad.args, code, stdout, stderr, bad.want)
		}
	}
}
