package faulttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/controlplane"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/pgcluster"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/testenv"
)

// Lease settings of every replica in these tests: shorter than the defaults (15 s / 10 s /
// 2 s) so a takeover fits a test, long enough for a loaded 2-core machine to renew in time.
const (
	leaseDuration  = 6 * time.Second
	renewDeadline  = 4 * time.Second
	retryPeriod    = time.Second
	kubeAPITimeout = 2 * time.Second
	leaseNamespace = "switchboard-system"
	platformToken  = "fault-test-platform-token"
)

// env is what every scenario shares: one control plane, one database with one seeded account,
// one HTTPS receiver (a path per scenario) and the built binary. Scenarios run one after
// another, each with its own webhook endpoint and Lease.
type env struct {
	bin        string
	dir        string
	kubeconfig string
	cp         *controlplane.Env
	pg         *pgcluster.Cluster
	dbURL      string
	kube       client.Client
	ownerKey   string
	receiver   *receiver
	caFile     string
}

var (
	sharedOnce sync.Once
	shared     *env
	sharedErr  error
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// setup starts the shared environment once (only when a scenario runs, not for -bench).
func setup(t *testing.T) *env {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func start() (_ *env, err error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "switchboard-faulttest-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return nil, err
	}
	e.bin = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", e.bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the switchboard binary: %w\n%s", err, out)
	}
	if e.cp, err = controlplane.Start(ctx); err != nil {
		return nil, err
	}
	e.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeTokenKubeconfig(e.kubeconfig, e.cp); err != nil {
		return nil, err
	}
	if e.kube, err = client.New(e.cp.Config, client.Options{Scheme: e.cp.Scheme}); err != nil {
		return nil, err
	}
	if err := e.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
		return nil, err
	}
	if e.pg, err = pgcluster.Start(ctx); err != nil {
		return nil, err
	}
	if err := e.pg.CreateDatabase(ctx, "switchboard", ""); err != nil {
		return nil, err
	}
	e.dbURL = e.pg.URL("switchboard")
	if _, err := store.Migrate(ctx, e.dbURL); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, e.dbURL)
	if err != nil {
		return nil, err
	}
	demo, err := seed.Demo(ctx, st, seed.DemoOptions{Calls: 1})
	if err != nil {
		st.Close()
		return nil, err
	}
	st.Close()
	e.ownerKey = demo.OwnerKey
	e.receiver = newReceiver()
	e.caFile = filepath.Join(dir, "receiver-ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.receiver.srv.Certificate().Raw})
	if err := os.WriteFile(e.caFile, ca, 0o600); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *env) stop() {
	if e.receiver != nil {
		e.receiver.srv.Close()
	}
	if e.pg != nil {
		_ = e.pg.Stop()
	}
	if e.cp != nil {
		// A scenario that failed half-way may leave kube-apiserver stopped.
		if pid, err := e.apiServerPID(); err == nil {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		_ = e.cp.Stop()
	}
	_ = os.RemoveAll(e.dir)
}

// writeTokenKubeconfig writes a kubeconfig with the control plane's bearer token (what a
// service account token is in a cluster).
func writeTokenKubeconfig(path string, cp *controlplane.Env) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: switchboard-manager
  user:
    token: %s
contexts:
- name: envtest
  context: {cluster: envtest, user: switchboard-manager}
current-context: envtest
`, cp.Config.Host, base64.StdEncoding.EncodeToString(cp.Config.CAData), cp.Config.BearerToken)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// apiServerPID finds the kube-apiserver process of this control plane.
func (e *env) apiServerPID() (int, error) { return e.cp.APIServerPID() }

// leaseHolder is the identity holding a Lease ("" when none).
func (e *env) leaseHolder(ctx context.Context, name string) string {
	var l coordinationv1.Lease
	if err := e.kube.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: name}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// replica is one `switchboard serve` process.
type replica struct {
	name                  string
	api, platform, probes string
	cmd                   *exec.Cmd
	logPath               string
	exited                chan struct{}
}

// startReplica runs `switchboard serve` with the flags an operator would give outside a pod
// (leader election on by default) and waits until its API answers.
func (e *env) startReplica(t *testing.T, name, leaseID string, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, api: testenv.FreeAddr(t), platform: testenv.FreeAddr(t), probes: testenv.FreeAddr(t),
		logPath: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve",
		"--kubeconfig=" + e.kubeconfig, "--database-url=" + e.dbURL,
		"--api-bind-address=" + r.api, "--public-base-url=http://" + r.api, "--platform-bind-address=" + r.platform,
		"--health-probe-bind-address=" + r.probes, "--metrics-bind-address=0",
		"--recordings-dir=" + filepath.Join(e.dir, "recordings"), "--requests-per-minute=100000",
		"--webhook-allow-private-targets", "--webhook-ca-file=" + e.caFile,
		"--leader-election-namespace=" + leaseNamespace, "--leader-election-id=" + leaseID,
		"--leader-election-lease-duration=" + leaseDuration.String(), "--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String(), "--kube-api-timeout=" + kubeAPITimeout.String(),
	}, extra...)
	r.cmd = exec.Command(e.bin, args...)
	r.cmd.Env = append(os.Environ(), "SWITCHBOARD_PLATFORM_TOKEN="+platformToken,
		"SWITCHBOARD_LINK_SIGNING_KEY="+strings.Repeat("s", 32), "KUBECONFIG=")
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); logFile.Close(); close(r.exited) }()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("log of %s:\n%s", r.name, tail(r.logPath, 60))
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if status, _, _ := e.get("http://"+r.api+"/v1/me", e.ownerKey); status == http.StatusOK {
			return r
		}
		select {
		case <-r.exited:
			t.Fatalf("%s exited before serving:\n%s", name, tail(r.logPath, 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve within 90 s:\n%s", name, tail(r.logPath, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill sends SIGKILL (no shutdown, no Lease release) and waits for the process to end.
func (r *replica) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// stop ends the process cleanly (SIGTERM), or kills it after 20 s.
func (r *replica) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		r.kill()
	}
}

func (r *replica) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// logContains reports whether the replica has logged s.
func (r *replica) logContains(s string) bool {
	b, _ := os.ReadFile(r.logPath)
	return bytes.Contains(b, []byte(s))
}

// logCount is how many times the replica has logged s.
func (r *replica) logCount(s string) int {
	b, _ := os.ReadFile(r.logPath)
	return bytes.Count(b, []byte(s))
}

// get answers status, headers and body of a GET with a bearer key.
func (e *env) get(url, key string) (int, http.Header, []byte) {
	return e.do("GET", url, key, nil)
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func (e *env) do(method, url, key string, body any) (int, http.Header, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// createEndpoint gives the scenario an account of its own, with one number, and adds a
// webhook endpoint for call.ended to the receiver's path for the scenario: the inbox that
// verifies its signatures and reports calls to that number. An account per scenario keeps
// scenarios apart (an endpoint left by a scenario that killed its replicas neither counts
// against the next one's five endpoints nor receives its calls).
func (e *env) createEndpoint(t *testing.T, r *replica, scenario string) *inbox {
	t.Helper()
	key, number := e.createAccount(t, scenario)
	status, _, body := e.do("POST", "http://"+r.api+"/v1/webhooks", key, map[string]any{
		"name": scenario, "url": e.receiver.srv.URL + "/hook/" + scenario, "events": []string{"call.ended"}})
	if status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create the webhook endpoint: %d %s", status, body)
	}
	var created struct {
		Endpoint struct {
			PublicID string `json:"public_id"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Secret == "" {
		t.Fatalf("create the webhook endpoint: %s (%v)", body, err)
	}
	in := e.receiver.inbox(scenario, created.Secret)
	in.key, in.number, in.endpoint = key, number, created.Endpoint.PublicID
	return in
}

// createAccount adds an account with an owner key and one live number, the next of a range
// no other account uses.
func (e *env) createAccount(t *testing.T, scenario string) (key, number string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Fault test " + scenario, Plan: plans.Business,
		Addons: []string{plans.AddonIntegrations}, TimeZone: "Europe/London"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Owner", Role: "owner",
		Email: "owner+" + acct.PublicID + "@faulttest.example", CanManageAPIKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	created, err := st.CreateAPIKey(ctx, owner.ID, "fault test", auth.Abilities(auth.AllAbilities))
	if err != nil {
		t.Fatal(err)
	}
	number = fmt.Sprintf("+44113496%04d", scenarioNumbers.Add(1))
	if _, err := numbers.New(st, clock.RealClock{}).Provision(ctx, numbers.Provision{Account: acct.PublicID, Number: number}); err != nil {
		t.Fatal(err)
	}
	return created.Token, number
}

// scenarioNumbers numbers the scenarios' accounts' phone numbers.
var scenarioNumbers atomic.Int32

// report sends one ended call (no answer, so no recording) to a replica's platform API and
// returns the call's public id, which the call.ended event carries.
func (e *env) report(t *testing.T, r *replica, in *inbox, ref string) string {
	t.Helper()
	id, err := e.tryReport(r, in, ref)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// tryReport is report for a goroutine other than the test's.
func (e *env) tryReport(r *replica, in *inbox, ref string) (string, error) {
	status, _, body := e.do("POST", "http://"+r.platform+"/platform/v1/calls", platformToken, map[string]any{
		"platform_ref": ref, "to": in.number, "from": "+447700900201", "disposition": "no-answer",
		"started_at": time.Now().UTC().Add(-time.Minute).Truncate(time.Second), "duration_seconds": 30, "talk_seconds": 0})
	if status != http.StatusCreated {
		return "", fmt.Errorf("report %s: %d %s", ref, status, body)
	}
	var receipt struct {
		CallPublicID string `json:"call_public_id"`
	}
	if err := json.Unmarshal(body, &receipt); err != nil || receipt.CallPublicID == "" {
		return "", fmt.Errorf("report %s: %s (%v)", ref, body, err)
	}
	return receipt.CallPublicID, nil
}

// receiver is the HTTPS webhook receiver: one inbox per scenario path.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	inboxes map[string]*inbox
}

// delivery is one request the receiver accepted (signature verified).
type delivery struct {
	eventID, callID string
	at              time.Time
	// from is the sending process (0 when it could not be told).
	from int
}

type inbox struct {
	// key and number are the scenario's account's owner key and phone number, endpoint the
	// endpoint's public_id.
	key, number, endpoint string
	verifier              webhookverify.Verifier
	mu                    sync.Mutex
	got                   []delivery
	bad                   int
	// delay holds each answer back (deliveries in flight when a process is killed).
	delay time.Duration
	// inFlight is how many requests are being answered now, maxInFlight the most at once.
	inFlight, maxInFlight int
	// senders caches the sending process by peer address (connections are kept alive).
	senders map[string]int
}

func newReceiver() *receiver {
	r := &receiver{inboxes: map[string]*inbox{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r
}

func (r *receiver) inbox(scenario, secret string) *inbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := &inbox{verifier: webhookverify.Verifier{Secret: secret}, senders: map[string]int{}}
	r.inboxes["/hook/"+scenario] = in
	return in
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	in := r.inboxes[req.URL.Path]
	r.mu.Unlock()
	if in == nil {
		http.NotFound(w, req)
		return
	}
	body, err := in.verifier.Request(req)
	if err != nil {
		in.mu.Lock()
		in.bad++
		in.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p struct {
		ID   string `json:"id"`
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	_ = json.Unmarshal(body, &p)
	in.mu.Lock()
	from, known := in.senders[req.RemoteAddr]
	in.mu.Unlock()
	if !known {
		from = senderPID(req.RemoteAddr)
	}
	in.mu.Lock()
	if !known && from != 0 {
		in.senders[req.RemoteAddr] = from
	}
	delay := in.delay
	in.inFlight++
	in.maxInFlight = max(in.maxInFlight, in.inFlight)
	in.mu.Unlock()
	time.Sleep(delay)
	in.mu.Lock()
	in.inFlight--
	in.got = append(in.got, delivery{eventID: req.Header.Get(webhookverify.HeaderDelivery), callID: p.Call.ID, at: time.Now(), from: from})
	in.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (in *inbox) setDelay(d time.Duration) {
	in.mu.Lock()
	in.delay = d
	in.mu.Unlock()
}

// concurrency is the most requests the inbox answered at once since the last reset.
func (in *inbox) concurrency(reset bool) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := in.maxInFlight
	if reset {
		in.maxInFlight = in.inFlight
	}
	return n
}

// senderPID finds the process on this machine whose TCP socket has the local address
// remote (the receiver's peer), from /proc/net/tcp{,6} and the processes' descriptors.
func senderPID(remote string) int {
	_, portText, err := net.SplitHostPort(remote)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return 0
	}
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 {
				continue
			}
			local := f[1]
			i := strings.LastIndexByte(local, ':')
			if p, err := strconv.ParseInt(local[i+1:], 16, 32); err == nil && int(p) == port && f[3] == "01" { // ESTABLISHED
				inode = f[9]
				break
			}
		}
		if inode != "" {
			break
		}
	}
	if inode == "" {
		return 0
	}
	target := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && l == target {
				return pid
			}
		}
	}
	return 0
}

func (in *inbox) deliveries() []delivery {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]delivery(nil), in.got...)
}

// tally is what an inbox received for a set of reported calls.
type tally struct {
	missing []string // reported calls with no delivery
	// repeats: deliveries beyond the first of an event (same event id, at-least-once).
	repeats int
	// eventsPerCall > 1 would be one call announced as two events (never allowed).
	callsWithTwoEvents []string
	badSignatures      int
}

func (in *inbox) tally(calls []string) tally {
	in.mu.Lock()
	defer in.mu.Unlock()
	var tl tally
	tl.badSignatures = in.bad
	events := map[string]map[string]bool{} // call id -> event ids
	seen := map[string]bool{}
	for _, d := range in.got {
		if seen[d.eventID] {
			tl.repeats++
		}
		seen[d.eventID] = true
		if events[d.callID] == nil {
			events[d.callID] = map[string]bool{}
		}
		events[d.callID][d.eventID] = true
	}
	for _, c := range calls {
		switch n := len(events[c]); {
		case n == 0:
			tl.missing = append(tl.missing, c)
		case n > 1:
			tl.callsWithTwoEvents = append(tl.callsWithTwoEvents, c)
		}
	}
	return tl
}

// waitAll waits until every call has been delivered, or fails after timeout.
func (in *inbox) waitAll(t *testing.T, calls []string, timeout time.Duration) tally {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tl := in.tally(calls)
		if len(tl.missing) == 0 {
			return tl
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls not delivered within %s (e.g. %v)", len(tl.missing), len(calls), timeout, tl.missing[:min(3, len(tl.missing))])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(path string, lines int) string {
	b, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func uniqueRef(prefix string, i int) string {
	return fmt.Sprintf("%s-%s-%d", prefix, rand.Text()[:8], i)
}
