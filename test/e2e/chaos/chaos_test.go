package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// The shape of a run.
const (
	replicas = 3
	accounts = 3
	// reportsPerSecond is each account's pace of call reports.
	reportsPerSecond = 4
	// flapper is the account whose receiver flaps.
	flapper = 0
	// perEndpoint is --webhook-per-endpoint (serve's default): the attempts in flight to
	// one endpoint, so the most one crash can repeat per endpoint.
	perEndpoint = 8
	// stuckSlack is how long past its next attempt a WebhookDelivery may still be waiting
	// for its reconcile.
	stuckSlack = 30 * time.Second
)

// BenchDuration is the run's length in `make bench` unless CHAOS_DURATION says otherwise.
const BenchDuration = 30 * time.Minute

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	os.Exit(m.Run())
}

// TestChaos runs every fault at once against three replicas for CHAOS_DURATION (default
// DefaultDuration), then checks the invariants and prints the recovery after each fault.
//
// It runs when CHAOS=1: it needs the machine to itself, so make test runs it after the other
// packages (make test-chaos), not beside them in go test ./....
func TestChaos(t *testing.T) {
	if os.Getenv("CHAOS") != "1" {
		t.Skip("the chaos run needs the machine to itself: CHAOS=1 (make test-chaos, the last step of make test)")
	}
	seed, d, err := Config(os.Getenv, rand.Int64)
	if err != nil {
		t.Fatal(err)
	}
	run(t, seed, d)
}

// BenchmarkChaos is TestChaos for BenchDuration, reporting the recovery times.
func BenchmarkChaos(b *testing.B) {
	if os.Getenv("CHAOS") != "1" {
		b.Skip("the chaos run needs the machine to itself: CHAOS=1")
	}
	getenv := func(k string) string {
		if v := os.Getenv(k); v != "" || k != "CHAOS_DURATION" {
			return v
		}
		return BenchDuration.String()
	}
	seed, d, err := Config(getenv, rand.Int64)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		res := run(b, seed, d)
		for _, row := range res.table {
			b.ReportMetric(row.apiMax.Seconds(), row.kind.String()+"-api-max-s")
			b.ReportMetric(row.flowMax.Seconds(), row.kind.String()+"-deliveries-max-s")
		}
		b.ReportMetric(float64(res.repeats), "repeats")
		b.ReportMetric(float64(res.calls), "calls")
	}
}

// account is one account of the run: its key, number, endpoint, receiver and what it reported.
type account struct {
	index                 int
	id                    int64
	publicID, key, number string
	endpoint              string
	rcv                   *receiver

	mu       sync.Mutex
	reported map[string]time.Time // call id -> when its report was answered 201
	taken    map[string]string    // call id -> which replica answered 201 or 200, and when
	tried    int                  // reports sent (distinct platform refs)
	acked    int                  // answered 201 or 200 duplicate
	gaveUp   int
	topUpOK  int64 // pence of top-ups that returned no error
	topUpAll int64 // pence of every top-up tried
}

// probe is one round of the prober's requests to one replica.
type probe struct {
	at      time.Time
	replica int
	ok      bool // every request answered 2xx
}

// executed is a fault as it happened.
type executed struct {
	Fault
	start, end time.Time // the fault began; it ended (the part is started again, answers again)
	ready      time.Time // a restarted replica serves
	escalated  bool      // a SIGTERM not obeyed within 30 s, so killed
}

// row is the recovery after one kind of fault.
type row struct {
	kind             Kind
	n                int
	downMed, downMax time.Duration
	apiMed, apiMax   time.Duration
	apiN             int
	flowMed, flowMax time.Duration
	flowN            int
	apiNA            bool // the API does not depend on the part (a receiver)
}

type result struct {
	table   []row
	repeats int
	calls   int
}

// world is the run's parts and everything it observed.
type world struct {
	t   testing.TB
	clk clock.WithTicker
	e   *servetest.Env
	bin string
	st  *store.Store

	mu       sync.Mutex
	replicas []*servetest.Replica
	up       []bool
	slot     []sync.Mutex // one fault at a time per replica
	// deps is held for writing while PostgreSQL or kube-apiserver is down: a replica is
	// started again only with both up (a pod's restart would crash-loop until they are).
	deps sync.RWMutex

	accounts []*account
	// stored is every account's calls once the load has stopped (what must be delivered,
	// including calls whose 201 was lost); nil until then.
	stored   map[int][]string
	probes   []probe
	exits    []exit
	bad5xx   []string
	answers  atomic.Int64
	rr       atomic.Uint64
	problems []string
}

func (w *world) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.problems) < 50 {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

// do sends one API request and keeps its answer for the 5xx check.
func (w *world) do(method, url, key string, body any) (int, http.Header, []byte) {
	status, h, b := servetest.Do(method, url, key, body)
	if status == 0 {
		return status, h, b // no answer: a stopped process or a dropped connection
	}
	w.answers.Add(1)
	if servetest.Bad5xx(status, h) {
		w.mu.Lock()
		w.bad5xx = append(w.bad5xx, fmt.Sprintf("%s %s %s: %d %.200s", w.clk.Now().Format(time.RFC3339), method, url, status, b))
		w.mu.Unlock()
	}
	return status, h, b
}

func (w *world) replica(i int) (*servetest.Replica, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.replicas[i], w.up[i]
}

func (w *world) setReplica(i int, r *servetest.Replica, up bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r != nil {
		w.replicas[i] = r
	}
	w.up[i] = up
}

// pick is the next replica that is up, round robin; nil when none is.
func (w *world) pick() *servetest.Replica {
	for range replicas {
		if r, up := w.replica(int(w.rr.Add(1) % replicas)); up {
			return r
		}
	}
	return nil
}

// failures is testing.TB that also keeps what made the run fail, to repeat it after the
// replicas' logs that the failed run prints on its way out.
type failures struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (f *failures) keep(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 10 {
		f.msgs = append(f.msgs, msg)
	}
}

func (f *failures) Error(args ...any) {
	f.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Error(args...)
}
func (f *failures) Fatal(args ...any) {
	f.Helper()
	f.keep(fmt.Sprint(args...))
	f.TB.Fatal(args...)
}
func (f *failures) Errorf(format string, args ...any) {
	f.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Errorf(format, args...)
}
func (f *failures) Fatalf(format string, args ...any) {
	f.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.TB.Fatalf(format, args...)
}

func (f *failures) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.msgs, "\n")
}

func run(outer testing.TB, seed int64, d time.Duration) result {
	failed := &failures{TB: outer}
	tb := testing.TB(failed)
	opts := DefaultOptions(d)
	opts.Replicas, opts.Accounts = replicas, accounts
	schedule := Schedule(seed, d, opts)
	replay := fmt.Sprintf("CHAOS_SEED=%d CHAOS_DURATION=%s", seed, d)
	tb.Logf("chaos run: %s, %d faults:", replay, len(schedule))
	for _, f := range schedule {
		tb.Logf("  at %6s %-16s for %6s target %d", f.At.Round(time.Second), f.Kind, f.Duration.Round(100*time.Millisecond), f.Target)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("the run failed:\n%s\n%s go test -count=1 -v -run TestChaos ./test/e2e/chaos/ replays its schedule", failed, replay)
		}
	})

	w := &world{t: tb, clk: clock.RealClock{}, replicas: make([]*servetest.Replica, replicas), up: make([]bool, replicas),
		slot: make([]sync.Mutex, replicas)}
	dir := tb.TempDir()
	runStart := w.clk.Now()
	w.bin = servetest.BuildCurrent(tb, dir)
	w.e = servetest.Start(tb)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, w.e.DBURL); err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(ctx, w.e.DBURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	w.st = st
	for i := range replicas {
		w.setReplica(i, w.e.StartReplica(tb, w.bin, fmt.Sprintf("replica-%d", i), "chaos"), true)
	}
	maxFlaps := int(float64(reportsPerSecond)*(d+time.Minute).Seconds()) + 100
	for i := range accounts {
		var flaps []Answer
		if i == flapper {
			flaps = Flaps(seed, maxFlaps)
		}
		w.accounts = append(w.accounts, w.newAccount(i, flaps))
	}

	// Load: reports, the prober and top-ups, until the run ends.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var reports sync.WaitGroup
	var loops sync.WaitGroup
	for _, a := range w.accounts {
		loops.Add(1)
		go func() { defer loops.Done(); w.reportLoop(loadCtx, a, &reports) }()
	}
	loops.Add(1)
	go func() { defer loops.Done(); w.topUpLoop(loadCtx) }()
	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	var prober sync.WaitGroup
	prober.Add(2)
	go func() { defer prober.Done(); w.probeLoop(probeCtx) }()
	go func() { defer prober.Done(); w.watchExits(probeCtx) }()

	warmUp := 30 * time.Second
	if d >= 10*time.Minute {
		warmUp = time.Minute
	}
	w.clk.Sleep(warmUp)
	warm := w.rss()
	var warmMax int64
	for _, v := range warm {
		warmMax = max(warmMax, v)
	}
	tb.Logf("after %s of warm-up: replicas' RSS %v MiB; faults start", warmUp, mib(warm))

	// The faults, each at its time.
	start := w.clk.Now()
	done := make([]executed, len(schedule))
	var faults sync.WaitGroup
	for i, f := range schedule {
		faults.Add(1)
		go func() { defer faults.Done(); done[i] = w.execute(ctx, f, start) }()
	}
	w.clk.Sleep(d)
	faults.Wait()
	end := w.clk.Now()
	tb.Logf("faults over %s after they started; settling", end.Sub(start).Round(time.Second))

	// Settle: no new reports; the flapper answers 200; what was reported is delivered.
	stopLoad()
	loops.Wait()
	reports.Wait()
	for _, a := range w.accounts {
		a.rcv.StopFlapping()
	}
	w.stored = map[int][]string{}
	for _, a := range w.accounts {
		w.stored[a.index] = w.storedCalls(a)
		a.mu.Lock()
		var dup, none int
		for _, id := range w.stored[a.index] {
			if _, ok := a.reported[id]; ok {
				continue
			}
			if _, ok := a.taken[id]; ok {
				dup++
			} else {
				none++
			}
		}
		a.mu.Unlock()
		tb.Logf("account %d: %d calls stored; of them %d answered 200 to a retry after the answer to an earlier try was lost, %d never answered",
			a.index, len(w.stored[a.index]), dup, none)
	}
	// The retries a minute after a failed attempt fall within this; a delivery that also
	// failed its first retry (a flap, then an outage or a crash) waits 5 minutes more, and is
	// hastened as an integrator would: pause the endpoint (its retries are cancelled at once,
	// with the reason), activate it, and recover what failed or was cancelled since the run
	// began.
	settled := w.waitDelivered(opts.Length[ReceiverOutage].Max + 90*time.Second)
	tb.Logf("%s after the faults ended: all delivered %v", w.clk.Since(end).Round(time.Second), settled)
	if !settled {
		for i, calls := range w.undelivered() {
			w.recover(w.accounts[i], len(calls), runStart)
		}
		settled = w.waitDelivered(2 * time.Minute)
		tb.Logf("%s after the faults ended, after recovering: all delivered %v", w.clk.Since(end).Round(time.Second), settled)
	}
	stopProbes()
	prober.Wait()

	res := w.check(done, warmMax)
	res.table = w.recovery(done)
	w.printTable(res.table, seed, d)
	return res
}

// newAccount adds an account with an owner key, one live number and top-up credit, and a
// webhook endpoint for call.ended (made through the public API) at a receiver of its own.
func (w *world) newAccount(i int, flaps []Answer) *account {
	tb := w.t
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acct, err := w.st.CreateAccount(ctx, store.NewAccount{Name: fmt.Sprintf("Chaos %d", i), Plan: plans.Business,
		Addons: []string{plans.AddonIntegrations}, TimeZone: "Europe/London"})
	if err != nil {
		tb.Fatal(err)
	}
	owner, err := w.st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Owner", Role: "owner",
		Email: "owner+" + acct.PublicID + "@chaos.example", CanManageAPIKeys: true})
	if err != nil {
		tb.Fatal(err)
	}
	key, err := w.st.CreateAPIKey(ctx, owner.ID, "chaos", auth.Abilities(auth.AllAbilities))
	if err != nil {
		tb.Fatal(err)
	}
	number := fmt.Sprintf("+44113497%04d", i+1)
	if _, err := numbers.New(w.st, w.clk).Provision(ctx, numbers.Provision{Account: acct.PublicID, Number: number}); err != nil {
		tb.Fatal(err)
	}
	rcv, err := newReceiver(i, w.clk, flaps)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rcv.Close)
	r, _ := w.replica(0)
	// Right after the replicas start, kube-apiserver may still be settling (503 with
	// Retry-After): ask again as a client would, within a minute.
	var status int
	var body []byte
	for deadline := w.clk.Now().Add(time.Minute); ; w.clk.Sleep(time.Second) {
		status, _, body = w.do("POST", "http://"+r.API+"/v1/webhooks", key.Token, map[string]any{
			"name": fmt.Sprintf("chaos-%d", i), "url": rcv.URL(), "events": []string{"call.ended"}})
		if status != 0 && status != http.StatusServiceUnavailable || w.clk.Now().After(deadline) {
			break
		}
		tb.Logf("create the webhook endpoint of account %d: %d %.200s; again in a second", i, status, body)
	}
	var created struct {
		Endpoint struct {
			PublicID string `json:"public_id"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.Secret == "" {
		tb.Fatalf("create the webhook endpoint: %d %s", status, body)
	}
	rcv.setSecret(created.Secret)
	return &account{index: i, id: acct.ID, publicID: acct.PublicID, key: key.Token, number: number,
		endpoint: created.Endpoint.PublicID, rcv: rcv, reported: map[string]time.Time{}, taken: map[string]string{}}
}

// reportLoop reports ended calls for a at reportsPerSecond through the platform ingestion
// API of the replicas that are up, each report in a goroutine of its own (a report waits
// while PostgreSQL is down).
func (w *world) reportLoop(ctx context.Context, a *account, reports *sync.WaitGroup) {
	tick := w.clk.NewTicker(time.Second / reportsPerSecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		ref := servetest.UniqueRef(fmt.Sprintf("chaos-%d", a.index), i)
		a.mu.Lock()
		a.tried++
		a.mu.Unlock()
		reports.Add(1)
		go func() { defer reports.Done(); w.report(a, ref) }()
	}
}

// report sends one report until a replica takes it (201, or 200 for a report an earlier
// try stored), as the platform retries: a stopped replica, a dropped connection and a 503
// are tried again on the next replica.
func (w *world) report(a *account, ref string) {
	deadline := w.clk.Now().Add(2 * time.Minute)
	for {
		if r := w.pick(); r != nil {
			status, _, body := w.do("POST", "http://"+r.Platform+"/platform/v1/calls", servetest.PlatformToken, servetest.Report(ref, a.number))
			switch status {
			case http.StatusCreated, http.StatusOK:
				// 200: an earlier try was stored but its answer lost (a replica stopped after
				// the commit); the call is stored all the same and must be delivered.
				var receipt struct {
					CallPublicID string `json:"call_public_id"`
				}
				if err := json.Unmarshal(body, &receipt); err != nil || receipt.CallPublicID == "" {
					w.problem("report %s: %d %.200s", ref, status, body)
					return
				}
				id := receipt.CallPublicID
				now := w.clk.Now()
				a.mu.Lock()
				if status == http.StatusCreated {
					a.reported[id] = now
				}
				a.taken[id] = fmt.Sprintf("report answered %d by %s at %s", status, r.Name, now.Format("15:04:05.000"))
				a.acked++
				a.mu.Unlock()
				return
			case 0, http.StatusServiceUnavailable:
			default:
				w.problem("report %s to %s: %d %.200s", ref, r.Name, status, body)
				return
			}
		}
		if w.clk.Now().After(deadline) {
			a.mu.Lock()
			a.gaveUp++
			a.mu.Unlock()
			w.problem("report %s: not taken within 2 minutes", ref)
			return
		}
		w.clk.Sleep(250 * time.Millisecond)
	}
}

// topUpLoop adds credit to the accounts in turn every 2 s, as `switchboard admin top-up`
// does, so the ledger is written across the faults.
func (w *world) topUpLoop(ctx context.Context) {
	tick := w.clk.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		a := w.accounts[i%accounts]
		pence := int64(100 + i%37)
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := w.st.TopUp(tctx, a.id, pence, w.clk.Now())
		cancel()
		a.mu.Lock()
		a.topUpAll += pence
		if err == nil {
			a.topUpOK += pence
		}
		a.mu.Unlock()
	}
}

// probeLoop asks every replica that is up, twice a second, for the account's webhook
// endpoints (kube-apiserver and PostgreSQL) and a page of calls (PostgreSQL).
func (w *world) probeLoop(ctx context.Context) {
	tick := w.clk.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	a := w.accounts[accounts-1]
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		for i := range replicas {
			r, up := w.replica(i)
			if !up {
				continue
			}
			s1, _, _ := w.do("GET", "http://"+r.API+"/v1/webhooks", a.key, nil)
			s2, _, _ := w.do("GET", "http://"+r.API+"/v1/calls?per_page=1", a.key, nil)
			p := probe{at: w.clk.Now(), replica: i, ok: s1/100 == 2 && s2/100 == 2}
			w.mu.Lock()
			w.probes = append(w.probes, p)
			w.mu.Unlock()
		}
	}
}

// exit is a replica that stopped when no fault stopped it.
type exit struct {
	at      time.Time
	replica int
}

// watchExits restarts, as a kubelet would, a replica that exits when no fault stopped it,
// and records it: no fault of the schedule should make a process exit.
func (w *world) watchExits(ctx context.Context) {
	tick := w.clk.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		for i := range replicas {
			if !w.slot[i].TryLock() {
				continue // a fault holds it
			}
			r, up := w.replica(i)
			if up && !r.Running() {
				at := w.clk.Now()
				w.setReplica(i, nil, false)
				w.t.Errorf("replica %d exited at %s with no fault stopping it:\n%s", i, at.Format("15:04:05.000"), servetest.Tail(r.LogPath, 5))
				w.mu.Lock()
				w.exits = append(w.exits, exit{at: at, replica: i})
				w.mu.Unlock()
				w.deps.RLock()
				next := w.e.Restart(w.t, r)
				w.deps.RUnlock()
				w.setReplica(i, next, true)
			}
			w.slot[i].Unlock()
		}
	}
}

// execute waits for f's time and makes it happen.
func (w *world) execute(ctx context.Context, f Fault, start time.Time) executed {
	w.clk.Sleep(f.At - w.clk.Since(start))
	ex := executed{Fault: f}
	fail := func(format string, args ...any) executed {
		w.problem("%s at %s: %s", f.Kind, f.At.Round(time.Second), fmt.Sprintf(format, args...))
		return ex
	}
	switch f.Kind {
	case KillReplica, TermReplica:
		w.slot[f.Target].Lock()
		defer w.slot[f.Target].Unlock()
		r, _ := w.replica(f.Target)
		w.setReplica(f.Target, nil, false)
		ex.start = w.clk.Now()
		if f.Kind == KillReplica {
			r.Kill()
		} else {
			ex.escalated = w.term(r)
		}
		w.clk.Sleep(f.Duration)
		ex.end = w.clk.Now()
		w.deps.RLock()
		next := w.e.Restart(w.t, r)
		w.deps.RUnlock()
		ex.ready = w.clk.Now()
		w.setReplica(f.Target, next, true)
	case PostgresRestart:
		w.deps.Lock()
		defer w.deps.Unlock()
		ex.start = w.clk.Now()
		if err := w.e.PG.StopServer(); err != nil {
			return fail("stop PostgreSQL: %v", err)
		}
		w.clk.Sleep(f.Duration)
		ex.end = w.clk.Now()
		if err := w.e.PG.StartServer(ctx); err != nil {
			return fail("start PostgreSQL: %v", err)
		}
	case APIServerFreeze:
		w.deps.Lock()
		defer w.deps.Unlock()
		resume, err := w.e.CP.FreezeAPIServer()
		if err != nil {
			return fail("freeze kube-apiserver: %v", err)
		}
		ex.start = w.clk.Now()
		w.clk.Sleep(f.Duration)
		resume()
		ex.end = w.clk.Now()
	case ReceiverOutage:
		rcv := w.accounts[f.Target].rcv
		ex.start = w.clk.Now()
		rcv.Down()
		w.clk.Sleep(f.Duration)
		ex.end = w.clk.Now()
		if err := rcv.Up(); err != nil {
			return fail("the receiver did not listen again: %v", err)
		}
	}
	return ex
}

// term stops r as a rolling update does (SIGTERM); a process still running 30 s later is
// killed, and reported so (escalated), since its attempts in flight are then cut.
func (w *world) term(r *servetest.Replica) (escalated bool) {
	_ = syscall.Kill(r.Pid(), syscall.SIGTERM)
	deadline := w.clk.Now().Add(30 * time.Second)
	for r.Running() {
		if w.clk.Now().After(deadline) {
			r.Kill()
			return true
		}
		w.clk.Sleep(50 * time.Millisecond)
	}
	return false
}

// rss is each replica's resident memory in bytes (0 for one that is not running).
func (w *world) rss() []int64 {
	out := make([]int64, replicas)
	for i := range replicas {
		r, _ := w.replica(i)
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r.Pid()), "status"))
		if err != nil || !r.Running() {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				out[i] = kb << 10
			}
		}
	}
	return out
}

func mib(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, b := range v {
		out[i] = b >> 20
	}
	return out
}

// receipts is everything every receiver accepted.
func (w *world) receipts() []Receipt {
	var out []Receipt
	for _, a := range w.accounts {
		out = append(out, a.rcv.Receipts()...)
	}
	return out
}

// undelivered is the calls no receiver has accepted: of every call stored once the load
// stopped (w.stored), or before that of the calls answered 201.
func (w *world) undelivered() map[int][]string {
	got := map[string]bool{}
	for _, r := range w.receipts() {
		got[r.CallID] = true
	}
	out := map[int][]string{}
	for _, a := range w.accounts {
		ids, ok := w.stored[a.index]
		if !ok {
			a.mu.Lock()
			for id := range a.reported {
				ids = append(ids, id)
			}
			a.mu.Unlock()
		}
		for _, id := range ids {
			if !got[id] {
				out[a.index] = append(out[a.index], id)
			}
		}
	}
	return out
}

// waitDelivered waits until every call answered 201 has been delivered, or timeout.
func (w *world) waitDelivered(timeout time.Duration) bool {
	deadline := w.clk.Now().Add(timeout)
	for {
		if len(w.undelivered()) == 0 {
			return true
		}
		if w.clk.Now().After(deadline) {
			return false
		}
		w.clk.Sleep(time.Second)
	}
}

// apiReplica is a replica that is up, for the checks.
func (w *world) apiReplica() *servetest.Replica {
	for i := range replicas {
		if r, up := w.replica(i); up {
			return r
		}
	}
	w.t.Fatal("no replica is up")
	return nil
}

// storedCalls lists every call of a through the public API.
func (w *world) storedCalls(a *account) []string {
	r := w.apiReplica()
	var ids []string
	for page := 1; ; page++ {
		status, _, body := w.do("GET", fmt.Sprintf("http://%s/v1/calls?per_page=100&page=%d", r.API, page), a.key, nil)
		var p struct {
			Data []struct {
				PublicID string `json:"public_id"`
			} `json:"data"`
			LastPage int `json:"last_page"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
			w.t.Fatalf("GET /v1/calls page %d: %d %s", page, status, body)
		}
		for _, c := range p.Data {
			ids = append(ids, c.PublicID)
		}
		if page >= p.LastPage {
			return ids
		}
	}
}

// check asserts the invariants once the run has settled.
func (w *world) check(done []executed, warmMax int64) result {
	t := w.t
	res := result{}
	receipts := w.receipts()
	delivered := map[string]bool{}
	for _, r := range receipts {
		delivered[r.CallID] = true
	}

	// Every event delivered, or recorded as cancelled with its reason.
	for _, a := range w.accounts {
		stored := w.storedCalls(a)
		res.calls += len(stored)
		a.mu.Lock()
		reported := map[string]bool{}
		for id := range a.reported {
			reported[id] = true
		}
		tried, acked, gaveUp := a.tried, a.acked, a.gaveUp
		a.mu.Unlock()
		inList := map[string]bool{}
		var missing []string
		for _, id := range stored {
			inList[id] = true
			if !delivered[id] {
				missing = append(missing, id)
			}
		}
		for id := range reported {
			if !inList[id] {
				t.Errorf("account %d: call %s was answered 201 but GET /v1/calls does not list it", a.index, id)
			}
		}
		if len(stored) < acked || len(stored) > tried {
			t.Errorf("account %d: %d calls stored; want between the %d reports taken and the %d sent", a.index, len(stored), acked, tried)
		}
		cancelled, _, _ := w.cancelled(a)
		if len(missing) > cancelled {
			t.Errorf("account %d: %d of %d calls not delivered (e.g. %v) and %d deliveries cancelled with a reason",
				a.index, len(missing), len(stored), missing[:min(5, len(missing))], cancelled)
			for _, id := range missing[:min(5, len(missing))] {
				w.explain(a, id, done)
			}
		}
		t.Logf("account %d: %d reports sent, %d taken (%d gave up), %d calls stored, %d delivered, %d cancelled; flapped first answers %v",
			a.index, tried, acked, gaveUp, len(stored), len(stored)-len(missing), cancelled, a.rcv.Flapped())
		if bad := a.rcv.BadSignatures(); bad > 0 {
			t.Errorf("account %d: %d deliveries with a bad signature", a.index, bad)
		}
	}

	// Repeats only within the in-flight window of a crash (a kill -9, a process that exited
	// by itself, a PostgreSQL outage), at most the attempts in flight for a kill.
	var causes []Cause
	var why []string
	for _, ex := range done {
		switch {
		case ex.start.IsZero():
		case ex.Kind == KillReplica || ex.escalated:
			causes = append(causes, Cause{From: ex.start, To: ex.start})
			why = append(why, fmt.Sprintf("kill of replica %d at %s", ex.Target, ex.At.Round(time.Second)))
		case ex.Kind == PostgresRestart:
			causes = append(causes, Cause{From: ex.start, To: ex.end})
			why = append(why, fmt.Sprintf("PostgreSQL restart at %s", ex.At.Round(time.Second)))
		}
	}
	w.mu.Lock()
	for _, x := range w.exits {
		causes = append(causes, Cause{From: x.at, To: x.at})
		why = append(why, fmt.Sprintf("exit of replica %d", x.replica))
	}
	w.mu.Unlock()
	byCause, unexplained := AttributeRepeats(receipts, causes, CrashWindow)
	var per []string
	for i, n := range byCause {
		res.repeats += n
		per = append(per, fmt.Sprintf("%s: %d", why[i], n))
		if strings.HasPrefix(why[i], "kill") && n > perEndpoint*accounts {
			t.Errorf("%s repeated %d deliveries; at most %d (--webhook-per-endpoint × endpoints) were in flight", why[i], n, perEndpoint*accounts)
		}
	}
	res.repeats += len(unexplained)
	for _, r := range unexplained[:min(10, len(unexplained))] {
		t.Errorf("account %d: event %s (call %s) delivered at %s and again at %s, outside any crash's in-flight window",
			r.Account, r.EventID, r.CallID, r.First.Format("15:04:05.000"), r.At.Format("15:04:05.000"))
	}
	t.Logf("repeats: %d in all, %d outside a crash's window; %s", res.repeats, len(unexplained), strings.Join(per, ", "))

	// The ledger: balance = sum of its entries, and every acknowledged top-up is in it.
	for _, a := range w.accounts {
		w.checkLedger(a)
	}

	// No WebhookDelivery waiting past its next attempt.
	var list switchboardv1alpha1.WebhookDeliveryList
	if err := w.e.Kube.List(context.Background(), &list); err != nil {
		t.Errorf("list WebhookDeliveries: %v", err)
	}
	now := w.clk.Now()
	live := 0
	for _, d := range list.Items {
		if d.Status.Phase != "" && d.Status.Phase != switchboardv1alpha1.WebhookDeliveryPhasePending &&
			d.Status.Phase != switchboardv1alpha1.WebhookDeliveryPhaseRetrying {
			continue
		}
		live++
		due := d.CreationTimestamp.Time
		if d.Status.NextAttemptAt != nil {
			due = d.Status.NextAttemptAt.Time
		}
		if now.Sub(due) > stuckSlack {
			t.Errorf("WebhookDelivery %s/%s is %s (%d attempts) with its attempt due %s ago", d.Namespace, d.Name,
				d.Status.Phase, d.Status.Attempts, now.Sub(due).Round(time.Second))
		}
	}
	t.Logf("WebhookDeliveries at the end: %d, %d pending or retrying", len(list.Items), live)

	// No 5xx but 503 with Retry-After.
	w.mu.Lock()
	bad, problems := append([]string(nil), w.bad5xx...), append([]string(nil), w.problems...)
	w.mu.Unlock()
	for _, b := range bad[:min(10, len(bad))] {
		t.Errorf("a server error other than 503 with Retry-After: %s", b)
	}
	t.Logf("API answers: %d, %d server errors other than 503 with Retry-After", w.answers.Load(), len(bad))
	for _, p := range problems {
		t.Error(p)
	}

	// Memory flat.
	end := w.rss()
	bound := MemoryBound(warmMax)
	for i, v := range end {
		if v > bound {
			t.Errorf("replica %d holds %d MiB at the end; bound %d MiB (largest after warm-up %d MiB)", i, v>>20, bound>>20, warmMax>>20)
		}
	}
	t.Logf("replicas' RSS at the end %v MiB; bound %d MiB (largest after warm-up %d MiB + 50%% + 32 MiB)", mib(end), bound>>20, warmMax>>20)
	return res
}

// recover pauses a's endpoint until none of its deliveries is retrying or pending (each is
// cancelled with its reason), activates it, and recovers every delivery since since.
func (w *world) recover(a *account, undelivered int, since time.Time) {
	t := w.t
	r := w.apiReplica()
	base := "http://" + r.API + "/v1/webhooks/" + a.endpoint
	if status, _, body := w.do("PATCH", base, a.key, map[string]any{"status": "paused"}); status != http.StatusOK {
		t.Errorf("pause the endpoint of account %d: %d %s", a.index, status, body)
		return
	}
	// The controller acts on the pause at once, but cancels the deliveries one by one (a history
	// row, then the resource's deletion, at the client's request rate): after a long run an
	// endpoint can hold hundreds. Two minutes is for that on a loaded machine.
	var left map[string][]string // phase: names of the endpoint's deliveries not yet ended
	for deadline := w.clk.Now().Add(2 * time.Minute); ; w.clk.Sleep(time.Second) {
		var list switchboardv1alpha1.WebhookDeliveryList
		if err := w.e.Kube.List(context.Background(), &list); err != nil {
			continue
		}
		left = map[string][]string{}
		for _, d := range list.Items {
			if d.Spec.EndpointName == a.endpoint && (d.Status.Phase == "" || d.Status.Phase == switchboardv1alpha1.WebhookDeliveryPhasePending ||
				d.Status.Phase == switchboardv1alpha1.WebhookDeliveryPhaseRetrying) {
				left[string(d.Status.Phase)] = append(left[string(d.Status.Phase)], fmt.Sprintf("%s (created %s, deleting %v)",
					d.Name, d.CreationTimestamp.Format(time.TimeOnly), d.DeletionTimestamp != nil))
			}
		}
		if len(left) == 0 {
			break
		}
		if w.clk.Now().After(deadline) {
			for phase, names := range left {
				t.Errorf("account %d: 2 minutes after its endpoint was paused, %d deliveries still %q, e.g. %v", a.index, len(names), phase, names[:min(3, len(names))])
			}
			return
		}
	}
	cancelled, noReason, example := w.cancelled(a)
	if noReason > 0 {
		t.Errorf("account %d: %d deliveries cancelled with no reason", a.index, noReason)
	}
	if status, _, body := w.do("PATCH", base, a.key, map[string]any{"status": "active"}); status != http.StatusOK {
		t.Errorf("activate the endpoint of account %d: %d %s", a.index, status, body)
		return
	}
	status, _, body := w.do("POST", base+"/recover", a.key, map[string]any{"since": since.UTC().Format(time.RFC3339)})
	t.Logf("account %d: %d calls undelivered; paused its endpoint (%d deliveries cancelled, e.g. %q), activated it, recover: %d %s",
		a.index, undelivered, cancelled, example, status, body)
	if status != http.StatusAccepted {
		t.Errorf("recover the deliveries of account %d: %d %s", a.index, status, body)
	}
}

// cancelled counts the events whose delivery to a's endpoint the history holds as cancelled,
// with a reason and without one, and gives one reason. The history is read whole: the API
// lists only the latest 100 deliveries, and a long run cancels more.
func (w *world) cancelled(a *account) (withReason, noReason int, example string) {
	rows, err := w.e.PG.Query(context.Background(), "switchboard", `
		SELECT count(DISTINCT event_id) FILTER (WHERE coalesce(last_error, '') <> ''),
		       count(DISTINCT event_id) FILTER (WHERE coalesce(last_error, '') = ''),
		       coalesce(max(last_error), '')
		FROM webhook_delivery_history WHERE endpoint_public_id = $1 AND status = 'cancelled'`, a.endpoint)
	if err != nil || len(rows) != 1 || len(rows[0]) != 3 {
		w.t.Errorf("the cancelled deliveries of account %d: %v %v", a.index, rows, err)
		return 0, 0, ""
	}
	withReason, _ = strconv.Atoi(rows[0][0])
	noReason, _ = strconv.Atoi(rows[0][1])
	return withReason, noReason, rows[0][2]
}

// explain logs the whole story of an undelivered call: how its report was taken, its
// events (the outbox rows, resends included, with their claims and dispatched mark), their
// history rows and kept attempts, their live WebhookDeliveries, the replicas' log lines that
// name them, and the faults around its report.
func (w *world) explain(a *account, call string, done []executed) {
	t, ctx := w.t, context.Background()
	a.mu.Lock()
	taken, ok := a.taken[call]
	a.mu.Unlock()
	if !ok {
		taken = "stored, but no answer to its report reached the platform"
	}
	t.Logf("call %s (account %d): %s", call, a.index, taken)
	q := func(what, sql string) [][]string {
		rows, err := w.e.PG.Query(ctx, "switchboard", sql, call)
		if err != nil {
			t.Logf("call %s: %s: %v", call, what, err)
			return nil
		}
		t.Logf("call %s: %s: %q", call, what, rows)
		return rows
	}
	const ids = `(SELECT e.id FROM events e JOIN calls c ON c.id = e.call_id WHERE c.public_id = $1
		UNION SELECT r.id FROM events r JOIN events e ON r.resends = e.id JOIN calls c ON c.id = e.call_id WHERE c.public_id = $1)`
	evs := q("events (id, type, created, dispatched, claimed until, claims, endpoint, resends, resend of)", `
		SELECT id, type, created_at, coalesce(dispatched_at::text, '-'), coalesce(claimed_until::text, '-'), claims,
		       coalesce(endpoint_public_id, ''), coalesce(resends::text, ''), coalesce(resend_of, '')
		FROM events WHERE id IN `+ids+` ORDER BY created_at`)
	q("history (delivery, event, status, attempts, code, last error, created, finished)", `
		SELECT delivery_name, event_id, status, attempts, coalesce(response_code, 0), coalesce(last_error, ''), created_at, finished_at
		FROM webhook_delivery_history WHERE event_id IN `+ids+` ORDER BY id`)
	q("attempts kept (delivery, attempt, at, code, error, next)", `
		SELECT delivery_name, attempt, created_at, coalesce(response_code, 0), error, coalesce(next_attempt_at::text, '-')
		FROM webhook_delivery_attempts WHERE event_id IN `+ids+` ORDER BY created_at`)
	q("deferred (delivery, event)", `SELECT delivery_name, event_id FROM webhook_deferred_deliveries WHERE event_id IN `+ids)
	needles := []string{call}
	for _, e := range evs {
		needles = append(needles, e[0])
		var list switchboardv1alpha1.WebhookDeliveryList
		if err := w.e.Kube.List(ctx, &list, client.MatchingLabels{send.LabelEventID: e[0]}); err != nil {
			t.Logf("call %s: WebhookDeliveries of event %s: %v", call, e[0], err)
			continue
		}
		for _, d := range list.Items {
			needles = append(needles, d.Name)
			t.Logf("call %s: WebhookDelivery %s/%s of event %s: phase %q, %d attempts, next %v, last error %q, created %s",
				call, d.Namespace, d.Name, e[0], d.Status.Phase, d.Status.Attempts, d.Status.NextAttemptAt, d.Status.LastError,
				d.CreationTimestamp.Format("15:04:05"))
		}
	}
	for i := range replicas {
		r, _ := w.replica(i)
		b, err := os.ReadFile(r.LogPath)
		if err != nil {
			continue
		}
		var lines []string
		for _, line := range strings.Split(string(b), "\n") {
			if slices.ContainsFunc(needles, func(n string) bool { return strings.Contains(line, n) }) {
				lines = append(lines, line)
			}
		}
		t.Logf("call %s: %s's log lines naming it: %d\n%s", call, r.Name, len(lines), strings.Join(lines[:min(20, len(lines))], "\n"))
	}
	a.mu.Lock()
	at, answered := a.reported[call]
	a.mu.Unlock()
	if answered {
		for _, ex := range done {
			if !ex.start.IsZero() && !at.Before(ex.start.Add(-CrashWindow.Before)) && !at.After(ex.end.Add(time.Minute)) {
				t.Logf("call %s: reported at %s, near %s of target %d from %s to %s", call, at.Format("15:04:05.000"), ex.Kind, ex.Target,
					ex.start.Format("15:04:05.000"), ex.end.Format("15:04:05.000"))
			}
		}
	}
}

// checkLedger reads a's balance and every ledger entry through the public API.
func (w *world) checkLedger(a *account) {
	t := w.t
	r := w.apiReplica()
	status, _, body := w.do("GET", "http://"+r.API+"/v1/balance", a.key, nil)
	var bal struct {
		BalancePence *int64 `json:"balance_pence"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &bal) != nil || bal.BalancePence == nil {
		t.Errorf("GET /v1/balance of account %d: %d %s", a.index, status, body)
		return
	}
	var sum int64
	entries := 0
	for page := 1; ; page++ {
		status, _, body := w.do("GET", fmt.Sprintf("http://%s/v1/billing/ledger?per_page=100&page=%d", r.API, page), a.key, nil)
		var p struct {
			Data []struct {
				AmountPence int64 `json:"amount_pence"`
			} `json:"data"`
			LastPage int `json:"last_page"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
			t.Errorf("GET /v1/billing/ledger of account %d page %d: %d %s", a.index, page, status, body)
			return
		}
		for _, e := range p.Data {
			sum += e.AmountPence
			entries++
		}
		if page >= p.LastPage {
			break
		}
	}
	a.mu.Lock()
	ok, all := a.topUpOK, a.topUpAll
	a.mu.Unlock()
	if *bal.BalancePence != sum {
		t.Errorf("account %d: balance %d pence, its %d ledger entries sum to %d", a.index, *bal.BalancePence, entries, sum)
	}
	if sum < ok || sum > all {
		t.Errorf("account %d: ledger sums to %d pence; want between the %d acknowledged and the %d tried", a.index, sum, ok, all)
	}
	t.Logf("account %d: balance %d pence = sum of %d ledger entries (top-ups acknowledged %d, tried %d)", a.index, *bal.BalancePence, entries, ok, all)
}

// recovery measures, for each fault, how long after its end the API answered 2xx again
// (the restarted replica; any replica after PostgreSQL or kube-apiserver came back) and the
// first event reported after its end reached a receiver (the receiver that was out, after an
// outage).
func (w *world) recovery(done []executed) []row {
	w.mu.Lock()
	probes := append([]probe(nil), w.probes...)
	w.mu.Unlock()
	reportedAt := map[string]time.Time{}
	for _, a := range w.accounts {
		a.mu.Lock()
		for id, at := range a.reported {
			reportedAt[id] = at
		}
		a.mu.Unlock()
	}
	var table []row
	for _, k := range Kinds {
		rw := row{kind: k, apiNA: k == ReceiverOutage}
		var downs, apis, flows []time.Duration
		for _, ex := range done {
			if ex.Kind != k || ex.start.IsZero() {
				continue
			}
			rw.n++
			downs = append(downs, ex.end.Sub(ex.start))
			if !rw.apiNA {
				var oks []time.Time
				for _, p := range probes {
					if p.ok && (p.replica == ex.Target || (k != KillReplica && k != TermReplica)) {
						oks = append(oks, p.at)
					}
				}
				if d, ok := FirstAfter(oks, ex.end); ok {
					apis = append(apis, d)
				} else {
					w.t.Errorf("%s at %s: the API never answered 2xx after it", k, ex.At.Round(time.Second))
				}
			}
			var arrivals []time.Time
			for _, r := range w.receipts() {
				if k == ReceiverOutage && r.Account != ex.Target {
					continue
				}
				if at, ok := reportedAt[r.CallID]; ok && !at.Before(ex.end) {
					arrivals = append(arrivals, r.At)
				}
			}
			flow, ok := FirstAfter(arrivals, ex.end)
			w.t.Logf("  %-16s at %6s target %d: down %s, restarted and serving %s after, API 2xx %s after, first new delivery %s after",
				k, ex.At.Round(time.Second), ex.Target, ex.end.Sub(ex.start).Round(10*time.Millisecond), since(ex.ready, ex.end),
				lastOr(apis, rw.apiNA, len(apis) == rw.n), flow.Round(10*time.Millisecond))
			if ok {
				flows = append(flows, flow)
			} else {
				w.t.Logf("%s at %s: no event reported after it was delivered (it ended as the load stopped)", k, ex.At.Round(time.Second))
			}
		}
		rw.downMed, rw.downMax = Spread(downs)
		rw.apiMed, rw.apiMax = Spread(apis)
		rw.apiN = len(apis)
		rw.flowMed, rw.flowMax = Spread(flows)
		rw.flowN = len(flows)
		table = append(table, rw)
	}
	return table
}

func (w *world) printTable(table []row, seed int64, d time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "recovery after each kind of fault (CHAOS_SEED=%d CHAOS_DURATION=%s); median / max:\n", seed, d)
	fmt.Fprintf(&b, "| Fault | Times | Down | API answers 2xx after the fault ends | First new event delivered after the fault ends |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- |\n")
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	for _, rw := range table {
		api := "n/a"
		if !rw.apiNA {
			api = fmt.Sprintf("%s / %s", r(rw.apiMed), r(rw.apiMax))
		}
		fmt.Fprintf(&b, "| %s | %d | %s / %s | %s | %s / %s |\n", rw.kind, rw.n, r(rw.downMed), r(rw.downMax), api, r(rw.flowMed), r(rw.flowMax))
	}
	w.t.Log(b.String())
}

func since(t, from time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(from).Round(10 * time.Millisecond).String()
}

func lastOr(ds []time.Duration, na, have bool) string {
	if na || !have || len(ds) == 0 {
		return "-"
	}
	return ds[len(ds)-1].Round(10 * time.Millisecond).String()
}
