package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	os.Exit(m.Run())
}

// The drill: traffic to a slow receiver (so deliveries wait), an etcd snapshot, then a
// rotated secret, a new endpoint and a top-up, then a PostgreSQL dump, more traffic, both
// stores destroyed, both restored, the service started. Then every endpoint of the snapshot
// delivers with the secret it had then, every call committed before the dump is delivered,
// what came after the dump is gone (404), the endpoint created between the two backups
// (named by the restored history, absent from the restored etcd) is a 404, the balance is
// the sum of the ledger, and nothing answered 5xx other than 503 with Retry-After.
func TestBackupRestoreDrill(t *testing.T) {
	bin := servetest.BuildCurrent(t, t.TempDir())
	e := servetest.Start(t)
	demo := e.SeedDemo(t, bin)
	key := demo.OwnerKey
	const lease = "restore-drill"
	// Two attempts at a time to an endpoint that takes 250 ms an answer: 8 deliveries a
	// second against about 30 reports, so the outbox holds a backlog when the dump is taken.
	before := e.StartReplica(t, bin, "before", lease, "--webhook-per-endpoint=2")
	number := servetest.LiveNumber(t, before)
	kept, keptIn := e.CreateEndpoint(t, before, key, "kept")
	rotated, rotatedIn := e.CreateEndpoint(t, before, key, "rotated")
	keptIn.SetDelay(250 * time.Millisecond) // a slow receiver: deliveries wait in the outbox
	e.Run(t, bin, "admin", "top-up", demo.AccountID, "--pence=500")

	// An older PostgreSQL backup, before a second account existed whose endpoint the etcd
	// snapshot will hold (the second act restores the two together).
	olderBackup := filepath.Join(t.TempDir(), "older")
	runScript(t, "backup.sh", []string{"DATABASE_URL=" + e.DBURL}, olderBackup, "postgresql")
	other := createAccount(t, e, bin)
	orphan, _ := e.CreateEndpoint(t, before, other.OwnerKey, "orphan")

	ld := startReports(before, number)
	time.Sleep(3 * time.Second)
	backup := filepath.Join(t.TempDir(), "backup")
	runScript(t, "backup.sh", []string{"DATABASE_URL=" + e.DBURL, "ETCDCTL_ENDPOINTS=" + e.CP.EtcdURL()}, backup, "etcd")

	// Between the two backups: a rotated secret, a new endpoint (its deliveries reach the
	// history the dump holds), a top-up.
	status, _, body := servetest.Do("POST", "http://"+before.API+"/v1/webhooks/"+rotated.PublicID+"/rotate", key, nil)
	var rot struct {
		Secret string `json:"secret"`
	}
	// rotate answers {endpoint, secret}
	if status != http.StatusOK || json.Unmarshal(body, &rot) != nil || rot.Secret == "" {
		t.Fatalf("rotate: %d %s", status, body)
	}
	rotatedIn.SetSecret(rot.Secret)
	lost, lostIn := e.CreateEndpoint(t, before, key, "created-between-backups")
	e.Run(t, bin, "admin", "top-up", demo.AccountID, "--pence=300")
	servetest.WaitFor(t, "deliveries to the endpoint created between the backups", time.Minute, func() bool { return len(lostIn.Deliveries()) >= 3 })
	wantBalance := balance(t, before, key)

	dumpStart := time.Now()
	runScript(t, "backup.sh", []string{"DATABASE_URL=" + e.DBURL, "ETCDCTL_ENDPOINTS=" + e.CP.EtcdURL()}, backup, "postgresql")
	dumpEnd := time.Now()
	time.Sleep(2 * time.Second)
	e.Run(t, bin, "admin", "top-up", demo.AccountID, "--pence=700") // after the dump: lost
	res := ld.stop()
	undelivered := len(keptIn.Tally(res.before(dumpStart)).Missing)
	if undelivered == 0 {
		t.Fatal("every call was delivered before the dump: the drill tests no undelivered event")
	}

	// The site is lost: the process, etcd and PostgreSQL with their files.
	before.Kill()
	if err := e.CP.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.PG.Stop(); err != nil {
		t.Fatal(err)
	}

	// Restore onto new stores, as docs/upgrades-and-restore.md says.
	ctx := context.Background()
	pg, err := pgcluster.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UsePostgreSQL(pg); err != nil {
		t.Fatal(err)
	}
	etcdData := filepath.Join(t.TempDir(), "etcd")
	runScript(t, "restore.sh", []string{"DATABASE_URL=" + e.DBURL, "ETCD_DATA_DIR=" + etcdData}, backup)
	cp, err := controlplane.StartWith(ctx, controlplane.Options{EtcdDataDir: etcdData})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UseControlPlane(cp); err != nil {
		t.Fatal(err)
	}
	keptIn.SetDelay(0)
	rotatedIn.SetSecret(rotated.Secret) // the restored endpoint signs with the secret of the snapshot
	restoredAt := time.Now()
	after := e.StartReplica(t, bin, "after", lease)

	// Every call committed before the dump is delivered (those the slow receiver had not
	// taken by then come from the restored outbox or live deliveries).
	committed := res.before(dumpStart)
	tl := keptIn.WaitAll(t, committed, 3*time.Minute)
	deliveredAfter := time.Since(restoredAt)
	if tl.BadSignatures != 0 || len(tl.CallsWithTwoEvents) != 0 {
		t.Errorf("kept endpoint: bad signatures %d, calls announced twice %v", tl.BadSignatures, tl.CallsWithTwoEvents)
	}
	// New traffic reaches both endpoints of the snapshot, the rotated one with its old secret.
	var fresh []string
	for i := range 3 {
		fresh = append(fresh, servetest.ReportCall(t, after, servetest.UniqueRef("restored", i), number))
	}
	keptIn.WaitAll(t, fresh, 2*time.Minute)
	if tl := rotatedIn.WaitAll(t, fresh, 2*time.Minute); tl.BadSignatures != 0 {
		t.Errorf("the restored endpoint's deliveries failed verification with its old secret %d times", tl.BadSignatures)
	}

	api := "http://" + after.API + "/v1"
	// What came after the dump is gone: the recovery point of PostgreSQL.
	gone := res.after(dumpEnd)
	for _, id := range gone {
		if status, _, body := servetest.Do("GET", api+"/calls/"+id, key, nil); status != http.StatusNotFound {
			t.Errorf("call %s reported after the dump: %d %s, want 404", id, status, body)
		}
	}
	// The endpoint created between the backups: named by the history, absent from etcd.
	if status, _, body := servetest.Do("GET", api+"/webhooks/"+lost.PublicID+"/deliveries", key, nil); status != http.StatusNotFound {
		t.Errorf("GET the deliveries of the endpoint missing from etcd: %d %s, want 404", status, body)
	}
	if status, _, body := servetest.Do("POST", api+"/webhooks/"+lost.PublicID+"/test", key, nil); status != http.StatusNotFound {
		t.Errorf("POST test to the endpoint missing from etcd: %d %s, want 404", status, body)
	}
	status, _, body = servetest.Do("GET", api+"/webhooks", key, nil)
	var eps struct {
		Endpoints []struct {
			PublicID string `json:"public_id"`
		} `json:"endpoints"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &eps) != nil {
		t.Fatalf("GET /v1/webhooks after the restore: %d %s", status, body)
	}
	listed := map[string]bool{}
	for _, ep := range eps.Endpoints {
		listed[ep.PublicID] = true
	}
	if !listed[kept.PublicID] || !listed[rotated.PublicID] || listed[lost.PublicID] || len(eps.Endpoints) != 2 {
		t.Errorf("endpoints after the restore: %s; want %s and %s", body, kept.PublicID, rotated.PublicID)
	}
	// Money: the balance of the dump, equal to the sum of the ledger.
	got := balance(t, after, key)
	if sum := ledgerSum(t, after, key); got != sum || got != wantBalance {
		t.Errorf("after the restore: balance %d, sum of the ledger %d, balance at the dump %d", got, sum, wantBalance)
	}
	for _, path := range []string{"/me", "/calls?per_page=100", "/webhooks/" + kept.PublicID + "/deliveries", "/billing/ledger", "/notifications"} {
		if status, h, body := servetest.Do("GET", api+path, key, nil); status != http.StatusOK || servetest.Bad5xx(status, h) {
			t.Errorf("GET /v1%s after the restore: %d %s", path, status, body)
		}
	}
	if len(res.bad) > 0 {
		t.Errorf("%d answers were 5xx other than 503 with Retry-After, e.g. %v", len(res.bad), res.bad[:min(5, len(res.bad))])
	}
	if !after.Running() {
		t.Fatal("the restored service exited")
	}
	defer restoreOlderDatabase(t, e, bin, olderBackup, after, key, number, orphan, other.OwnerKey, other.AccountID, keptIn)
	t.Logf("FIGURES restore-drill: calls committed before the dump=%d (undelivered when the stores were destroyed=%d, all delivered %s after the restored service started, repeats=%d); reported after the dump (lost, 404)=%d; endpoints restored=2, created between the backups (404)=1; balance %d = ledger sum",
		len(committed), undelivered, deliveredAfter.Round(100*time.Millisecond), tl.Repeats, len(gone), got)
}

// Second act: the same etcd with the older PostgreSQL backup, so an endpoint in etcd names
// an account the database does not hold. The service starts, says so in one log line, and
// answers 401 to that account's key and 404 for its endpoint; the other account works.
func restoreOlderDatabase(t *testing.T, e *servetest.Env, bin, olderBackup string, prev *servetest.Replica,
	key, number string, orphan servetest.Endpoint, orphanKey, orphanAccount string, keptIn *servetest.Inbox) {
	t.Helper()
	prev.Stop()
	if err := e.PG.Stop(); err != nil {
		t.Fatal(err)
	}
	pg, err := pgcluster.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UsePostgreSQL(pg); err != nil {
		t.Fatal(err)
	}
	runScript(t, "restore.sh", []string{"DATABASE_URL=" + e.DBURL}, olderBackup, "postgresql")
	r := e.StartReplica(t, bin, "older-database", "restore-drill")
	const line = "webhook endpoints name an account PostgreSQL does not hold"
	servetest.WaitFor(t, "the log line about the endpoint without an account", time.Minute, func() bool {
		return r.LogContains(line) && r.LogContains(orphanAccount)
	})
	api := "http://" + r.API + "/v1"
	if status, _, body := servetest.Do("GET", api+"/webhooks", orphanKey, nil); status != http.StatusUnauthorized {
		t.Errorf("the missing account's key: %d %s, want 401", status, body)
	}
	if status, _, body := servetest.Do("GET", api+"/webhooks/"+orphan.PublicID+"/deliveries", key, nil); status != http.StatusNotFound {
		t.Errorf("the orphan endpoint through another account: %d %s, want 404", status, body)
	}
	call := servetest.ReportCall(t, r, servetest.UniqueRef("older", 0), number)
	keptIn.WaitAll(t, []string{call}, 2*time.Minute)
	time.Sleep(2 * time.Second)
	if !r.Running() {
		t.Fatal("the service exited on a restore that disagrees")
	}
	if n := r.LogCount(line); n != 1 {
		t.Errorf("the orphan endpoint was logged %d times, want once per leader term", n)
	}
}

// createAccount makes a second account with the Integrations add-on (webhooks) through the
// admin CLI.
func createAccount(t *testing.T, e *servetest.Env, bin string) servetest.Demo {
	t.Helper()
	out := e.Run(t, bin, "admin", "create-account", "--name=Second Ltd", "--owner-name=Owner", "--owner-email=owner@second.example",
		"--addon=integrations")
	var d servetest.Demo
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(line, "account "); ok {
			d.AccountID = strings.TrimSpace(id)
		}
		if k, ok := strings.CutPrefix(line, "key "); ok {
			d.OwnerKey = strings.Fields(k)[0]
		}
	}
	if d.AccountID == "" || d.OwnerKey == "" {
		t.Fatalf("create-account printed no account or key:\n%s", out)
	}
	return d
}

// runScript runs a script of hack/ with env added, failing the test on error.
func runScript(t *testing.T, script string, env []string, args ...string) {
	t.Helper()
	root, err := controlplane.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", script), args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/%s %v: %v\n%s", script, args, err, out)
	}
}

func balance(t *testing.T, r *servetest.Replica, key string) int64 {
	t.Helper()
	status, _, body := servetest.Do("GET", "http://"+r.API+"/v1/balance", key, nil)
	var b struct {
		BalancePence int64 `json:"balance_pence"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &b) != nil {
		t.Fatalf("GET /v1/balance: %d %s", status, body)
	}
	return b.BalancePence
}

// ledgerSum adds up every entry of GET /v1/billing/ledger, page by page.
func ledgerSum(t *testing.T, r *servetest.Replica, key string) int64 {
	t.Helper()
	var sum int64
	for page := 1; ; page++ {
		status, _, body := servetest.Do("GET", fmt.Sprintf("http://%s/v1/billing/ledger?per_page=100&page=%d", r.API, page), key, nil)
		var p struct {
			Data []struct {
				AmountPence int64 `json:"amount_pence"`
			} `json:"data"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
			t.Fatalf("GET /v1/billing/ledger page %d: %d %s", page, status, body)
		}
		for _, entry := range p.Data {
			sum += entry.AmountPence
		}
		if len(p.Data) < 100 {
			return sum
		}
	}
}

// reports sends a call report every 30 ms and keeps when each was answered.
type reports struct {
	r       *servetest.Replica
	number  string
	mu      sync.Mutex
	calls   []reported
	bad     []string
	done    chan struct{}
	stopped chan struct{}
}

type reported struct {
	id       string
	sent, at time.Time // request sent, answer received
}

type reportResult struct {
	calls []reported
	bad   []string
}

func startReports(r *servetest.Replica, number string) *reports {
	l := &reports{r: r, number: number, done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(l.stopped)
		for i := 0; ; i++ {
			select {
			case <-l.done:
				return
			case <-time.After(30 * time.Millisecond):
			}
			sent := time.Now()
			status, h, body := servetest.Do("POST", "http://"+r.Platform+"/platform/v1/calls", servetest.PlatformToken,
				servetest.Report(servetest.UniqueRef("drill", i), number))
			l.mu.Lock()
			if id, err := servetest.CallID(status, body); err == nil {
				l.calls = append(l.calls, reported{id: id, sent: sent, at: time.Now()})
			} else if servetest.Bad5xx(status, h) {
				l.bad = append(l.bad, fmt.Sprintf("report: %d %s", status, body))
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *reports) stop() reportResult {
	close(l.done)
	<-l.stopped
	l.mu.Lock()
	defer l.mu.Unlock()
	return reportResult{calls: l.calls, bad: l.bad}
}

// before is the calls answered before t (committed, so in a dump started at t).
func (r reportResult) before(t time.Time) []string {
	var ids []string
	for _, c := range r.calls {
		if c.at.Before(t) {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// after is the calls sent after t (committed later, so not in a dump that ended at t).
func (r reportResult) after(t time.Time) []string {
	var ids []string
	for _, c := range r.calls {
		if c.sent.After(t) {
			ids = append(ids, c.id)
		}
	}
	return ids
}
