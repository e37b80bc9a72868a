// Package servetest runs switchboard binaries (this tree's or an older release's) as real
// `serve` processes against a real kube-apiserver and etcd (test/support/controlplane), a real
// PostgreSQL (test/support/pgcluster) and a local HTTPS webhook receiver that verifies every
// signature and knows which process sent each delivery. The upgrade and restore tests use it.
package servetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// Lease settings of every replica: shorter than the defaults (15 s / 10 s / 2 s) so a
// takeover fits a test, long enough for a loaded 2-core machine to renew in time.
const (
	LeaseDuration  = 6 * time.Second
	RenewDeadline  = 4 * time.Second
	RetryPeriod    = time.Second
	KubeAPITimeout = 2 * time.Second
	LeaseNamespace = "switchboard-system"
	PlatformToken  = "servetest-platform-token"
)

// Env is one control plane, one PostgreSQL database and one HTTPS receiver shared by the
// replicas a test starts.
type Env struct {
	Dir        string
	Kubeconfig string
	CP         *controlplane.Env
	Kube       client.Client
	PG         *pgcluster.Cluster
	DBURL      string
	Receiver   *Receiver
	CAFile     string

	mu       sync.Mutex
	replicas []*Replica
}

// Start starts the parts; everything stops when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	e, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// New starts the parts, keeping the replicas' files in dir, for tests that share them (a
// package's TestMain); Close stops them.
func New(dir string) (_ *Env, err error) {
	ctx := context.Background()
	e := &Env{Dir: dir}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.Receiver = newReceiver(e.senderOf)
	e.CAFile = filepath.Join(e.Dir, "receiver-ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.Receiver.srv.Certificate().Raw})
	if err := os.WriteFile(e.CAFile, ca, 0o600); err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.UseControlPlane(cp); err != nil {
		return nil, err
	}
	pg, err := pgcluster.Start(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.UsePostgreSQL(pg); err != nil {
		return nil, err
	}
	return e, nil
}

// UseControlPlane makes cp the control plane of the replicas started from now on (the
// restore drill replaces it) and creates the Lease namespace when it is missing.
func (e *Env) UseControlPlane(cp *controlplane.Env) error {
	e.CP = cp
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := writeTokenKubeconfig(e.Kubeconfig, cp); err != nil {
		return err
	}
	kube, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return err
	}
	e.Kube = kube
	err = kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LeaseNamespace}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// UsePostgreSQL makes database "switchboard" of pg the replicas' database, creating it when
// it is missing (a restore creates it itself).
func (e *Env) UsePostgreSQL(pg *pgcluster.Cluster) error {
	e.PG = pg
	e.DBURL = pg.URL("switchboard")
	err := pg.CreateDatabase(context.Background(), "switchboard", "")
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// Close stops the replicas and the parts.
func (e *Env) Close() {
	e.mu.Lock()
	replicas := append([]*Replica(nil), e.replicas...)
	e.mu.Unlock()
	for _, r := range replicas {
		r.Stop()
	}
	if e.Receiver != nil {
		e.Receiver.srv.Close()
	}
	if e.PG != nil {
		_ = e.PG.Stop()
	}
	if e.CP != nil {
		// A test that failed half-way may leave kube-apiserver frozen.
		if pid, err := e.CP.APIServerPID(); err == nil {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		_ = e.CP.Stop()
	}
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

// Run runs a switchboard command (migrate, seed, admin ...) against the database and
// returns its standard output.
func (e *Env) Run(t testing.TB, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.DBURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// Replica is one `switchboard serve` process.
type Replica struct {
	Name                  string
	API, Platform, Probes string
	LogPath               string
	bin                   string
	args                  []string
	cmd                   *exec.Cmd
	exited                chan struct{}
}

// StartReplica runs `bin serve` with the flags an operator would give outside a pod (leader
// election on) and waits until its API and readiness probe answer.
func (e *Env) StartReplica(t testing.TB, bin, name, leaseID string, extra ...string) *Replica {
	t.Helper()
	// A free port can be taken by another process before serve binds it: then try new ones.
	for attempt := 1; ; attempt++ {
		r := e.newReplica(t, bin, name, leaseID, extra)
		if !e.start(t, r, attempt < 3) {
			return r
		}
		t.Logf("%s: an address was taken before it could listen; starting it on new ones", name)
	}
}

func (e *Env) newReplica(t testing.TB, bin, name, leaseID string, extra []string) *Replica {
	r := &Replica{Name: name, API: testenv.FreeAddr(t), Platform: testenv.FreeAddr(t), Probes: testenv.FreeAddr(t),
		LogPath: filepath.Join(e.Dir, name+".log")}
	r.args = append([]string{"serve",
		"--kubeconfig=" + e.Kubeconfig, "--database-url=" + e.DBURL,
		"--api-bind-address=" + r.API, "--public-base-url=http://" + r.API, "--platform-bind-address=" + r.Platform,
		"--health-probe-bind-address=" + r.Probes, "--metrics-bind-address=0",
		"--recordings-dir=" + filepath.Join(e.Dir, "recordings"), "--requests-per-minute=100000",
		"--webhook-allow-private-targets", "--webhook-ca-file=" + e.CAFile,
		"--leader-election-namespace=" + LeaseNamespace, "--leader-election-id=" + leaseID,
		"--leader-election-lease-duration=" + LeaseDuration.String(), "--leader-election-renew-deadline=" + RenewDeadline.String(),
		"--leader-election-retry-period=" + RetryPeriod.String(), "--kube-api-timeout=" + KubeAPITimeout.String(),
	}, extra...)
	r.bin = bin
	return r
}

// Restart stops r (SIGTERM) and starts the same binary with the same flags and addresses
// again, as a server restart looks to its clients; it returns the new process.
func (e *Env) Restart(t testing.TB, r *Replica) *Replica {
	t.Helper()
	r.Stop()
	next := &Replica{Name: r.Name, API: r.API, Platform: r.Platform, Probes: r.Probes, LogPath: r.LogPath, bin: r.bin, args: r.args}
	e.start(t, next, false)
	return next
}

// start runs r's process and waits until it serves. With retryTaken, a process that exits
// because one of its addresses is in use is reported (true) instead of failing the test.
func (e *Env) start(t testing.TB, r *Replica, retryTaken bool) (addressTaken bool) {
	t.Helper()
	r.exited = make(chan struct{})
	logFile, err := os.OpenFile(r.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	name := r.Name
	r.cmd = exec.Command(r.bin, r.args...)
	r.cmd.Env = append(os.Environ(), "SWITCHBOARD_PLATFORM_TOKEN="+PlatformToken,
		"SWITCHBOARD_LINK_SIGNING_KEY="+strings.Repeat("s", 32), "KUBECONFIG=")
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); logFile.Close(); close(r.exited) }()
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("log of %s:\n%s", r.Name, Tail(r.LogPath, 60))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		api, _, _ := Do("GET", "http://"+r.API+"/v1/me", "", nil)
		ready, _, _ := Do("GET", "http://"+r.Probes+"/readyz", "", nil)
		if api == http.StatusUnauthorized && ready == http.StatusOK {
			return false
		}
		if !r.Running() {
			if retryTaken && strings.Contains(Tail(r.LogPath, 5), "address already in use") {
				return true
			}
			t.Fatalf("%s exited before serving:\n%s", name, Tail(r.LogPath, 40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve within 2 minutes:\n%s", name, Tail(r.LogPath, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Pid is the process id.
func (r *Replica) Pid() int { return r.cmd.Process.Pid }

// Kill sends SIGKILL (no shutdown, no Lease release) and waits for the process to end.
func (r *Replica) Kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// Stop ends the process as a rolling update does (SIGTERM), or kills it after 30 s.
func (r *Replica) Stop() {
	if !r.Running() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.Kill()
	}
}

// Running reports whether the process has not exited.
func (r *Replica) Running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// LogContains reports whether the replica has logged s.
func (r *Replica) LogContains(s string) bool {
	b, _ := os.ReadFile(r.LogPath)
	return bytes.Contains(b, []byte(s))
}

// LogCount counts the replica's log lines holding s.
func (r *Replica) LogCount(s string) int {
	b, _ := os.ReadFile(r.LogPath)
	return bytes.Count(b, []byte(s))
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// Do sends a request with a bearer key (none when key is "") and a JSON body (none when nil)
// and answers status (0 when the request failed), headers and body.
func Do(method, url, key string, body any) (int, http.Header, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
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

// LeaseHolder is the identity holding a Lease ("" when none) and when it last renewed.
func (e *Env) LeaseHolder(ctx context.Context, name string) (string, time.Time) {
	var l coordinationv1.Lease
	if err := e.Kube.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: name}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return "", time.Time{}
	}
	var renewed time.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	return *l.Spec.HolderIdentity, renewed
}

// Tail is the last lines of a file.
func Tail(path string, lines int) string {
	b, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// WaitFor polls cond every 100 ms and fails the test after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BuildCurrent builds this tree's switchboard binary into dir.
func BuildCurrent(t testing.TB, dir string) string {
	t.Helper()
	bin, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Build builds this tree's switchboard binary into dir and returns its path.
func Build(dir string) (string, error) {
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the switchboard binary: %w\n%s", err, out)
	}
	return bin, nil
}

// PreviousRelease is the previous release's binary: $PREVIOUS_RELEASE_BIN (make test sets it),
// else what hack/previous-release.sh builds (once, cached) from the commit the Makefile pins.
func PreviousRelease(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("PREVIOUS_RELEASE_BIN"); bin != "" {
		return bin
	}
	root, err := controlplane.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "previous-release.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build the previous release (hack/previous-release.sh): %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
