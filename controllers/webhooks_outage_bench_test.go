/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// BenchmarkWebhookOutage: a shared receiver's outage. BENCH_OUTAGE_ACCOUNTS accounts
// (default 10,000) with five endpoints each; the endpoints of a tenth of them (5,000 of 50,000)
// point at a receiver that is down for BENCH_OUTAGE_FOR (default 30m), answering 503 at once
// or, with BENCH_OUTAGE_MODE=hang, not at all, while the others' receiver answers at once.
// Throughout, random healthy accounts report BENCH_OUTAGE_HEALTHY_RATE call.ended events a
// second (default 20, five deliveries each) and random failing accounts
// BENCH_OUTAGE_FAILING_RATE (default 5). Then the receiver recovers and the run waits for
// every event of the failing accounts. Every minute it prints the healthy deliveries' p99 in
// that minute, the live WebhookDeliveries, the deferred rows and etcd's database size; at the
// end what was cancelled, left undispatched or delivered twice. One manager with the shipped
// defaults (--webhook-max-live 20,000; BENCH_MAX_LIVE sets another). Run with `make bench`; figures in docs/benchmarks.md.
func BenchmarkWebhookOutage(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	accounts := envInt("BENCH_OUTAGE_ACCOUNTS", 10000)
	healthyRate := envInt("BENCH_OUTAGE_HEALTHY_RATE", 20)
	failingRate := envInt("BENCH_OUTAGE_FAILING_RATE", 5)
	outageFor := 30 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("BENCH_OUTAGE_FOR")); err == nil && d > 0 {
		outageFor = d
	}
	mode, modeName := benchkit.OutageUnavailable, "503"
	if os.Getenv("BENCH_OUTAGE_MODE") == "hang" {
		mode, modeName = benchkit.OutageHang, "no answer"
	}
	const perAccount = 5
	failingAccounts := max(1, accounts/10)

	ctx := context.Background()
	cp, kube, st := startBenchStack(b)
	kasMemory(b, cp, "start")
	healthy, failing := benchkit.NewReceiver(), benchkit.NewReceiver()
	defer healthy.Srv.Close()
	defer failing.Srv.Close()
	t0 := time.Now()
	made := makeScaleAccounts(b, kube, st, accounts, perAccount, func(i int) string {
		if i < failingAccounts {
			return failing.Srv.URL
		}
		return healthy.Srv.URL
	})
	fmt.Printf("  %d accounts, %d endpoints (%d to the receiver that fails) made in %.1fs\n", accounts, accounts*perAccount,
		failingAccounts*perAccount, time.Since(t0).Seconds())
	kasMemory(b, cp, "outage-made")

	r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: healthy, clk: clock.RealClock{}, endpoints: perAccount}
	r.startManager()
	defer r.stop()
	r.tenant.Account.ID = made[accounts-1].id
	r.enqueue(1, 0)
	r.waitFor("the first delivery", 10*time.Minute, func() bool { return healthy.Delivered() >= perAccount })
	healthy.Take()
	kasMemory(b, cp, "outage-synced")

	// The stream: every 100 ms a batch of events for random accounts of each kind.
	var (
		mu          sync.Mutex
		created     = map[uuid.UUID]time.Time{} // healthy events not yet matched to deliveries
		failingSent atomic.Int64
		healthySent atomic.Int64
	)
	streamCtx, stopStream := context.WithCancel(ctx)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var hCarry, fCarry float64
		for {
			select {
			case <-streamCtx.Done():
				return
			case <-tick.C:
			}
			hCarry += float64(healthyRate) / 10
			fCarry += float64(failingRate) / 10
			var ids []uuid.UUID
			var accts []int64
			var bodies [][]byte
			add := func(i int) uuid.UUID {
				id := uuid.New()
				ids = append(ids, id)
				accts = append(accts, made[i].id)
				bodies = append(bodies, fmt.Appendf(nil, `{"event":"call.ended","id":%q,"call":{"id":"call_%s"}}`, id, id))
				return id
			}
			now := time.Now()
			var hIDs []uuid.UUID
			for ; hCarry >= 1; hCarry-- {
				hIDs = append(hIDs, add(failingAccounts+rand.IntN(accounts-failingAccounts)))
			}
			var nf int64
			for ; fCarry >= 1; fCarry-- {
				add(rand.IntN(failingAccounts))
				nf++
			}
			if len(ids) == 0 {
				continue
			}
			if _, err := storetest.SQL(b, st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at)
				SELECT unnest($1::uuid[]), unnest($2::bigint[]), 'call.ended', unnest($3::bytea[]), $4`, ids, accts, bodies, now); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			for _, id := range hIDs {
				created[id] = now
			}
			mu.Unlock()
			healthySent.Add(int64(len(hIDs)))
			failingSent.Add(nf)
		}
	}()

	// Healthy deliveries' latencies, per minute and in all.
	var all []time.Duration
	window := func() []time.Duration {
		var lat []time.Duration
		got := healthy.Take()
		mu.Lock()
		for _, d := range got {
			u, err := uuid.Parse(d.EventID)
			if err != nil {
				continue
			}
			if c, ok := created[u]; ok {
				lat = append(lat, d.At.Sub(c))
			}
		}
		mu.Unlock()
		slices.Sort(lat)
		all = append(all, lat...)
		return lat
	}
	var maxLive, maxDeferred int
	var maxEtcd float64
	var worstWindow time.Duration
	minute := func(phase string, since time.Time) {
		lat := window()
		live, deferred, etcd := countDeliveries(kube), deferredRows(b, st), etcdDBSize(b, cp.EtcdURL())
		maxLive, maxDeferred, maxEtcd = max(maxLive, live), max(maxDeferred, deferred), max(maxEtcd, etcd)
		p99 := benchkit.Pct(lat, 0.99)
		worstWindow = max(worstWindow, p99)
		fmt.Printf("  %s %5.1f min: healthy %5d delivered, p99 %4d ms; live WebhookDeliveries %5d; deferred %5d; etcd %4.0f MB; failing receiver %d delivered\n",
			phase, time.Since(since).Minutes(), len(lat), p99.Milliseconds(), live, deferred, etcd/1e6, failing.Delivered())
	}
	every := time.Minute
	if outageFor < 10*time.Minute {
		every = outageFor / 5
	}

	// The outage.
	cpu0 := benchkit.ProcCPU()
	failing.Outage.Store(mode)
	down := time.Now()
	fmt.Printf("outage: the failing receiver answers %s for %v\n", modeName, outageFor)
	for time.Since(down) < outageFor {
		time.Sleep(min(every, outageFor-time.Since(down)))
		minute("outage  ", down)
	}
	outageP99 := benchkit.Pct(sortedCopy(all), 0.99)
	kasMemory(b, cp, "outage-end")

	// Recovery: every event of the failing accounts delivered, the stream still running.
	failing.Outage.Store(benchkit.OutageNone)
	up := time.Now()
	attemptsAtUp, deliveredAtUp := failing.Attempts.Load(), failing.Delivered()
	fmt.Printf("recovery: the failing receiver answers again; %d of its %d deliveries made so far\n", deliveredAtUp, failingSent.Load()*perAccount)
	drainTimeout := outageFor + 15*time.Minute // the retry after 30 minutes, and room to drain
	next := time.Now().Add(every)
	for failing.Delivered() < int(failingSent.Load())*perAccount {
		if time.Since(up) > drainTimeout {
			b.Errorf("after %v, %d of %d deliveries to the recovered receiver made", drainTimeout, failing.Delivered(), failingSent.Load()*perAccount)
			break
		}
		time.Sleep(time.Second)
		if time.Now().After(next) {
			minute("recovery", up)
			next = next.Add(every)
		}
	}
	drained := time.Since(up)
	stopStream()
	<-streamed
	r.waitFor("the last healthy deliveries", time.Minute, func() bool {
		return healthy.Delivered() >= int(healthySent.Load())*perAccount+perAccount
	})
	minute("end     ", up)
	kasMemory(b, cp, "outage-drained")
	wall := time.Since(down)

	sorted := sortedCopy(all)
	fmt.Printf("healthy: %d deliveries, event→delivery p99 %v during the outage, %v in all, worst minute's p99 %v, max %v\n",
		len(sorted), outageP99.Round(time.Millisecond), benchkit.Pct(sorted, 0.99).Round(time.Millisecond),
		worstWindow.Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
	fmt.Printf("failing: %d deliveries, all made %.1f min after recovery (%d during it)\n",
		failing.Delivered(), drained.Minutes(), failing.Delivered()-deliveredAtUp)
	fmt.Printf("  most live WebhookDeliveries %d (cap %d); most deferred %d; etcd database at most %.0f MB\n",
		maxLive, benchMaxLive(), maxDeferred, maxEtcd/1e6)
	b.ReportMetric(float64(benchkit.Pct(sorted, 0.99).Milliseconds()), "healthy-p99-ms")
	b.ReportMetric(float64(worstWindow.Milliseconds()), "worst-minute-p99-ms")
	b.ReportMetric(float64(maxLive), "max-live")
	b.ReportMetric(maxEtcd/1e6, "max-etcd-MB")
	b.ReportMetric(drained.Minutes(), "drain-min")

	var notSucceeded, undispatched int
	if err := storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_history WHERE status <> 'succeeded'`).Scan(&notSucceeded); err != nil {
		b.Fatal(err)
	}
	if err := storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*) FROM events WHERE dispatched_at IS NULL`).Scan(&undispatched); err != nil {
		b.Fatal(err)
	}
	twice := healthy.Attempts.Load() - int64(healthy.Delivered()) +
		(failing.Attempts.Load() - attemptsAtUp) - int64(failing.Delivered()-deliveredAtUp)
	fmt.Printf("  not succeeded: %d; left undispatched: %d; 2xx answers beyond one per delivery: %d\n", notSucceeded, undispatched, twice)
	fmt.Printf("  CPU time over %.1f min: %s\n", wall.Minutes(), benchkit.CPUSince(cpu0, wall))
	fmt.Printf("  peak RSS: %s\n", benchkit.PeakRSS())
	if notSucceeded != 0 || undispatched != 0 {
		b.Errorf("%d deliveries did not succeed and %d events were left undispatched", notSucceeded, undispatched)
	}
	if maxLive > benchMaxLive() {
		b.Errorf("%d live WebhookDeliveries, over the cap of %d", maxLive, benchMaxLive())
	}
}

// deferredRows counts deliveries deferred in PostgreSQL.
func deferredRows(b *testing.B, st *store.Store) int {
	var n int
	if err := storetest.SQL(b, st).QueryRow(context.Background(), `SELECT count(*) FROM webhook_deferred_deliveries`).Scan(&n); err != nil {
		b.Error(err)
	}
	return n
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	slices.Sort(out)
	return out
}

// envInt is the positive integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
