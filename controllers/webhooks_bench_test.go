/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

type benchRun struct {
	b       *testing.B
	cp      *controlplane.Env
	kube    client.Client
	st      *store.Store
	tenant  apitest.Tenant
	ns      string
	rcv     *benchkit.Receiver
	clk     clock.WithTicker
	eps     []*switchboardv1alpha1.WebhookEndpoint
	created map[uuid.UUID]time.Time
	stop    func()
	maxRQ   time.Duration
	// endpoints is how many endpoints the account has (0: five).
	endpoints int
}

func (r *benchRun) startManager() {
	// As in production (ctrl.GetConfig): no client-side rate limit. envtest's config has
	// QPS 1000, which a delivery rate of 500/s (two writes each plus reads) would reach.
	cfg := rest.CopyConfig(r.cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	m, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: r.cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Logger: logr.Discard(), Cache: CacheOptions(), Controller: testControllers})
	if err != nil {
		r.b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(r.rcv.Srv.Certificate())
	sender := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool})
	ctx := context.Background()
	if err := (&WebhookEndpointReconciler{Client: m.GetClient(), Store: r.st, Clock: r.clk, MaxRequeue: r.maxRQ}).SetupWithManager(m); err != nil {
		r.b.Fatal(err)
	}
	eng, err := engine.NewEngine(ctx, m, engine.EngineOptions{Sender: sender, Store: r.st, Clock: r.clk,
		PerEndpoint: envInt("BENCH_PER_ENDPOINT", 0)})
	if err != nil {
		r.b.Fatal(err)
	}
	if err := (&WebhookDeliveryReconciler{Client: m.GetClient(), Store: r.st, Clock: r.clk, Engine: eng, MaxRequeue: r.maxRQ}).SetupWithManager(ctx, m); err != nil {
		r.b.Fatal(err)
	}
	// As in production, first attempts are made straight from the outbox;
	// BENCH_FIRST_ATTEMPTS=off measures every delivery as a resource (the design before).
	if os.Getenv("BENCH_FIRST_ATTEMPTS") == "off" {
		eng.First.Off = true
	}
	maxPending, _ := strconv.Atoi(os.Getenv("BENCH_MAX_PENDING")) // 0: the default
	maxLive := benchMaxLive()
	// As serve does, endpoints come from the watched cache once it has seen the account's
	// last write through the API (these endpoints are written directly: at once).
	endpoints := &engine.WatchedEndpoints{Cache: m.GetCache(), Live: m.GetAPIReader()}
	if err := endpoints.Watch(ctx); err != nil {
		r.b.Fatal(err)
	}
	if err := m.Add(&engine.Dispatcher{Client: m.GetClient(), Reader: m.GetAPIReader(), Endpoints: endpoints, Store: r.st, Clock: r.clk,
		Engine: eng, MaxPending: maxPending, MaxLive: maxLive, Log: logr.Discard()}); err != nil {
		r.b.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Start(mctx) }()
	r.stop = func() { cancel(); <-done }
}

// benchMaxLive is the cap on live WebhookDeliveries: BENCH_MAX_LIVE, or the shipped default.
func benchMaxLive() int {
	return envInt("BENCH_MAX_LIVE", engine.DefaultMaxLiveDeliveries)
}

func (r *benchRun) setup(clk clock.WithTicker) {
	r.createAccount(clk)
	r.startManager()
}

// createAccount makes the run's account, its namespace and its endpoints.
func (r *benchRun) createAccount(clk clock.WithTicker) {
	ctx := context.Background()
	r.clk = clk
	r.tenant = apitest.NewTenant(r.b, r.st, plans.Business)
	r.ns = tenancy.Namespace(r.tenant.Account.PublicID)
	if err := r.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}); err != nil {
		r.b.Fatal(err)
	}
	r.eps = nil
	for i := range r.endpointCount() {
		name := fmt.Sprintf("whep-bench-%d", i)
		ep := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
			Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: r.tenant.Account.PublicID, DisplayName: name,
				URL: fmt.Sprintf("%s/ep/%d", r.rcv.Srv.URL, i), Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded},
				SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: send.SecretName(name)}}}
		if err := r.kube.Create(ctx, ep); err != nil {
			r.b.Fatal(err)
		}
		if err := r.kube.Create(ctx, send.NewSigningSecret(ep, send.SecretName(name), send.NewSecret())); err != nil {
			r.b.Fatal(err)
		}
		r.eps = append(r.eps, ep)
	}
}

// enqueue inserts n call.ended events and notes when each was made (real time): all at
// once (rate 0), or rate events a second.
func (r *benchRun) enqueue(n, rate int) {
	ctx := context.Background()
	r.created = make(map[uuid.UUID]time.Time, n)
	batch, pace := 500, time.Duration(0)
	if rate > 0 {
		batch, pace = max(1, rate/10), 100*time.Millisecond
	}
	next := time.Now()
	for start := 0; start < n; start += batch {
		if pace > 0 {
			time.Sleep(time.Until(next))
			next = next.Add(pace)
		}
		ids := make([]uuid.UUID, 0, batch)
		bodies := make([][]byte, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			id := uuid.New()
			ids = append(ids, id)
			bodies = append(bodies, []byte(fmt.Sprintf(`{"event":"call.ended","id":%q,"call":{"id":"call_%d"}}`, id, i)))
		}
		now := time.Now()
		if _, err := storetest.SQL(r.b, r.st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at)
			SELECT unnest($1::uuid[]), $2, 'call.ended', unnest($3::bytea[]), $4`, ids, r.tenant.Account.ID, bodies, r.clk.Now()); err != nil {
			r.b.Fatal(err)
		}
		for _, id := range ids {
			r.created[id] = now
		}
	}
}

// liveDeliveries counts WebhookDelivery objects in etcd (an uncached list).
func (r *benchRun) liveDeliveries() int {
	return countDeliveries(r.kube, client.InNamespace(r.ns))
}

// countDeliveries counts WebhookDelivery objects in etcd matching opts, with an uncached list
// of one item and the remaining count: the sampler must not load the API server itself.
func countDeliveries(kube client.Client, opts ...client.ListOption) int {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(switchboardv1alpha1.GroupVersion.WithKind("WebhookDeliveryList"))
	if err := kube.List(context.Background(), list, append(opts, client.Limit(1))...); err != nil {
		return -1
	}
	n := len(list.Items)
	if rem := list.GetRemainingItemCount(); rem != nil {
		n += int(*rem)
	}
	return n
}

type sampler struct {
	maxHeap, maxLive atomic.Int64
	cpu0             map[string]time.Duration
	req0             map[string]float64
	cfg              *rest.Config
	deliveries       int
	t0               time.Time
	stop             chan struct{}
	done             chan struct{}
}

func (r *benchRun) sample() *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}), cpu0: benchkit.ProcCPU(), t0: time.Now(),
		req0: apiRequests(r.cp.Config), cfg: r.cp.Config, deliveries: r.endpointCount() * r.events()}
	if path := os.Getenv("BENCH_APISERVER_PROFILE"); path != "" {
		apiserverProfile(r.cp.Config, path+"."+strings.ReplaceAll(r.b.Name(), "/", "_"), 20*time.Second)
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if h := int64(ms.HeapInuse); h > s.maxHeap.Load() {
				s.maxHeap.Store(h)
			}
			if n := int64(r.liveDeliveries()); n > s.maxLive.Load() {
				s.maxLive.Store(n)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) end() {
	close(s.stop)
	<-s.done
	fmt.Printf("  CPU time over %.1fs: %s\n", time.Since(s.t0).Seconds(), benchkit.CPUSince(s.cpu0, time.Since(s.t0)))
	fmt.Printf("  API-server requests: %s\n", requestsSince(s.cfg, s.req0, s.deliveries))
}

func (r *benchRun) waitFor(what string, timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			r.b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *benchRun) report(name string, n int, paths ...string) {
	benchkit.Report(r.b, name, r.rcv, r.created, paths...)
}

// BenchmarkWebhookDelivery fans BENCH_EVENTS (default 10,000) call.ended events out to five
// endpoints of one account on a local TLS receiver, with kube-apiserver, etcd and
// PostgreSQL on this machine. Run with `make bench`; figures in docs/benchmarks.md.
func BenchmarkWebhookDelivery(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	n := benchkit.Events()
	cp, kube, st := startBenchStack(b)

	allSucceed := func(name string, rate int) {
		b.Run(name, func(b *testing.B) {
			r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver()}
			defer r.rcv.Srv.Close()
			r.setup(clock.RealClock{})
			defer r.stop()
			s := r.sample()
			r.enqueue(n, rate)
			r.waitFor("every delivery", 30*time.Minute, func() bool { return r.rcv.Delivered() >= 5*n })
			r.waitFor("etcd to empty", 5*time.Minute, func() bool { return r.liveDeliveries() == 0 })
			s.end()
			how := "all succeed, all events inserted at once (p50/p99 are backlog drain times)"
			if rate > 0 {
				how = fmt.Sprintf("all succeed, %d events/s (%d deliveries/s offered)", rate, 5*rate)
			}
			r.report(how, n)
			fmt.Printf("  peak heap in use (manager, receiver and harness in one process): %d MiB; WebhookDeliveries in etcd: peak %d, after %d\n",
				s.maxHeap.Load()>>20, s.maxLive.Load(), r.liveDeliveries())
			fmt.Printf("  peak resident memory since the benchmark started: %s\n", benchkit.PeakRSS())
		})
	}
	allSucceed("all-succeed", 0)
	allSucceed("all-succeed-paced", benchRate())

	// The engine to ONE endpoint (the usual customer): a burst, and BENCH_ONE_RATE events a
	// second. CPU per delivery covers the engine's whole path (claim, endpoint lookup, sign,
	// send, history, mark) plus the bulk insert of the events and the receiver.
	oneEndpoint := func(name string, rate int) {
		b.Run(name, func(b *testing.B) {
			r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver(), endpoints: 1}
			defer r.rcv.Srv.Close()
			r.setup(clock.RealClock{})
			defer r.stop()
			s := r.sample()
			statements := startPGStatements(b, st)
			cpu0 := benchkit.ProcCPU()
			r.enqueue(n, rate)
			r.waitFor("every delivery", 30*time.Minute, func() bool { return r.rcv.Delivered() >= n })
			cpu, _ := benchkit.CPUPerDelivery(cpu0, n)
			fmt.Printf("  CPU per delivery: %s\n", cpu)
			s.end()
			statements.print(n)
			how := "1 endpoint, all events inserted at once (p50/p99 are backlog drain times)"
			if rate > 0 {
				how = fmt.Sprintf("1 endpoint, %d events/s offered", rate)
			}
			r.report(how, n)
			fmt.Printf("  WebhookDeliveries in etcd: peak %d, after %d\n", s.maxLive.Load(), r.liveDeliveries())
		})
	}
	oneEndpoint("one-endpoint", 0)
	oneEndpoint("one-endpoint-paced", benchOneRate())

	b.Run("20pct-500", func(b *testing.B) {
		clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
		r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver(), maxRQ: time.Hour}
		r.rcv.FailRate = 0.2
		defer r.rcv.Srv.Close()
		r.setup(clk)
		defer func() { r.stop() }()
		s := r.sample()
		r.enqueue(n, 0)
		ctx := context.Background()
		// First pass: every delivery attempted once.
		var retrying []switchboardv1alpha1.WebhookDelivery
		r.waitFor("first attempts", 30*time.Minute, func() bool {
			list := &switchboardv1alpha1.WebhookDeliveryList{}
			if err := kube.List(ctx, list, client.InNamespace(r.ns)); err != nil {
				return false
			}
			for _, d := range list.Items {
				if d.Status.Attempts == 0 {
					return false
				}
			}
			var hist int
			_ = storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_history d JOIN accounts a ON a.id = d.account_id WHERE a.public_id = $1`,
				r.tenant.Account.PublicID).Scan(&hist)
			retrying = list.Items
			return hist+len(list.Items) == 5*n
		})
		r.report("20% answered 500, first attempts", n)
		wrong := 0
		for _, d := range retrying {
			if d.Status.Phase != switchboardv1alpha1.WebhookDeliveryPhaseRetrying || !d.Status.NextAttemptAt.Time.Equal(d.Status.LastAttemptAt.Add(time.Minute)) {
				wrong++
			}
		}
		fmt.Printf("  after the first attempts: %d deliveries retrying, %d not scheduled at +1 minute\n", len(retrying), wrong)
		// Step the clock through the schedule; a restarted manager picks every due retry up.
		for i, delay := range send.RetryDelays {
			before := r.rcv.Attempts.Load()
			r.stop()
			clk.Step(delay)
			r.startManager()
			r.waitFor("retries", 30*time.Minute, func() bool {
				list := &switchboardv1alpha1.WebhookDeliveryList{}
				if err := kube.List(ctx, list, client.InNamespace(r.ns)); err != nil {
					return false
				}
				for _, d := range list.Items {
					if int(d.Status.Attempts) < i+2 {
						return false
					}
				}
				return true
			})
			fmt.Printf("  retry %d (after %v): %d attempts, %d still live\n", i+1, delay, r.rcv.Attempts.Load()-before, r.liveDeliveries())
		}
		r.waitFor("etcd to empty", 5*time.Minute, func() bool { return r.liveDeliveries() == 0 })
		s.end()
		counts := map[string]int{}
		rows, err := storetest.SQL(b, st).Query(ctx, `SELECT d.status, count(*) FROM webhook_delivery_history d JOIN accounts a ON a.id = d.account_id
			WHERE a.public_id = $1 GROUP BY d.status`, r.tenant.Account.PublicID)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var s string
			var c int
			_ = rows.Scan(&s, &c)
			counts[s] = c
		}
		fmt.Printf("  history: %v; received with 2xx: %d of %d (lost: %d)\n", counts, r.rcv.Delivered(), 5*n, 5*n-r.rcv.Delivered()-counts["failed"])
	})

	b.Run("one-endpoint-hangs", func(b *testing.B) {
		r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver()}
		r.rcv.HangEp = 0
		defer r.rcv.Srv.Close()
		r.setup(clock.RealClock{})
		defer r.stop()
		s := r.sample()
		r.enqueue(n, benchRate())
		paths := []string{"/ep/1", "/ep/2", "/ep/3", "/ep/4"}
		r.waitFor("the four healthy endpoints", 30*time.Minute, func() bool { return r.rcv.Delivered() >= 4*n })
		s.end()
		r.report(fmt.Sprintf("one endpoint hanging past 10 s, %d events/s; the other four", benchRate()), n, paths...)
		_ = kube.Delete(context.Background(), r.eps[0]) // cancels what is in flight to it
		fmt.Printf("  peak WebhookDeliveries in etcd: %d (the hanging endpoint's wait there)\n", s.maxLive.Load())
	})
}

func (r *benchRun) events() int { return benchkit.Events() }

// endpointCount is how many endpoints the account has (default five).
func (r *benchRun) endpointCount() int {
	if r.endpoints == 0 {
		return 5
	}
	return r.endpoints
}

// benchOneRate is BENCH_ONE_RATE, the events a second of one-endpoint-paced (default 1,000).
func benchOneRate() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_ONE_RATE")); err == nil && v > 0 {
		return v
	}
	return 1000
}

// benchRate is BENCH_RATE, the events a second of the paced scenarios (default 100, which
// is 500 deliveries a second).
func benchRate() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_RATE")); err == nil && v > 0 {
		return v
	}
	return 100
}

// startBenchStack starts what every benchmark here runs on: kube-apiserver and etcd, a
// client of them, and a store on a database of its own whose postmaster benchkit measures.
// All of it stops when b ends.
func startBenchStack(b *testing.B) (*controlplane.Env, client.Client, *store.Store) {
	b.Helper()
	ctrl.SetLogger(logr.Discard())
	b.Cleanup(storetest.Shutdown)
	cp, err := controlplane.StartWith(context.Background(), controlplane.Options{APIServerFlags: benchAPIServerFlags(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	kube, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	// A pool as large as the delivery workers (pgxpool's default is four connections;
	// deployments set pool_max_conns in DATABASE_URL the same way).
	dbURL := storetest.NewDatabaseURL(b)
	st := storetest.Open(b, dbURL+poolParam(dbURL))
	var backend int
	if err := storetest.SQL(b, st).QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	benchkit.FindPostmaster(backend)
	monthOfPartitions(b, st)
	return cp, kube, st
}

// monthOfPartitions lays the partitioned tables out as a deployment has them after a month
// with the default --webhook-retention (30 days): a daily partition for each of the last 30
// days and the next 3, and the DEFAULT one. (A fresh database's first partition covers
// everything before the migration; the retention maintainer drops it once it is older than
// the window.) A statement on the outbox or the history that is not pruned to the partitions
// it needs pays for each. BENCH_PARTITION_DAYS sets another number of days back (0: the
// layout the migrations made).
func monthOfPartitions(b *testing.B, st *store.Store) {
	b.Helper()
	days := envInt("BENCH_PARTITION_DAYS", 30)
	if days == 0 {
		return
	}
	ctx := context.Background()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for _, table := range store.PartitionedTables {
		parts, err := st.Partitions(ctx, table)
		if err != nil {
			b.Fatal(err)
		}
		until := today.Add(3 * 24 * time.Hour) // where the dated partitions kept begin
		for _, p := range parts {
			switch {
			case p.Default:
			case p.From.IsZero(): // the migration's, empty in a new database
				if err := st.DropPartition(ctx, table, p.Name); err != nil {
					b.Fatal(err)
				}
			case p.From.Before(until):
				until = p.From
			}
		}
		for from := today.Add(-time.Duration(days) * 24 * time.Hour); from.Before(until); from = from.Add(24 * time.Hour) {
			if err := st.CreatePartition(ctx, table, from, from.Add(24*time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// startPlatform serves the ingestion API on st, as the telephony platform reaches it, with
// the folder of the call counts its reports leave, as serve runs them.
func startPlatform(b *testing.B, st *store.Store) *httptest.Server {
	platform := httptest.NewServer(ingest.New(ingest.Config{Token: e2eToken, LinkSigningKey: []byte("a link signing key of 32 bytes!!"),
		Links: events.Links{APIBaseURL: "https://api.example.test", DashboardURL: "https://app.example.test"}, Log: logr.Discard()}, st))
	b.Cleanup(platform.Close)
	ctx, stop := context.WithCancel(context.Background())
	folded := make(chan error, 1)
	go func() {
		folded <- (&ingest.CountFolder{Store: st, Clock: clock.RealClock{}, Log: logr.Discard()}).Start(ctx)
	}()
	b.Cleanup(func() {
		stop()
		if err := <-folded; err != nil {
			b.Error(err)
		}
	})
	return platform
}

// benchAPIServerFlags are the kube-apiserver flags of BENCH_KAS_FLAGS, space-separated
// name=value pairs without the dashes, e.g. "default-watch-cache-size=0".
func benchAPIServerFlags(b *testing.B) map[string]string {
	flags := map[string]string{}
	for _, f := range strings.Fields(os.Getenv("BENCH_KAS_FLAGS")) {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !ok {
			b.Fatalf("BENCH_KAS_FLAGS: %q is not name=value", f)
		}
		flags[name] = value
	}
	return flags
}

func poolParam(url string) string {
	if strings.Contains(url, "?") {
		return "&pool_max_conns=64"
	}
	return "?pool_max_conns=64"
}
