/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// BenchmarkWebhookFairness: one account floods BENCH_FAIR_FLOOD (default 20,000) events at
// once to an endpoint that answers in 200 ms (40 a second at the per-endpoint bound of 8),
// while another account queues 10 events a second for 30 s to an endpoint that answers at
// once, both on one manager with the shipped defaults. It reports the steady account's
// event→delivery latency during the flood, the flood's drain rate, its most WebhookDeliveries
// in etcd, and anything cancelled or delivered twice. Run with `make bench`; figures in
// docs/benchmarks.md.
func BenchmarkWebhookFairness(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	floodN := envInt("BENCH_FAIR_FLOOD", 20000)
	cp, kube, st := startBenchStack(b)
	slow := benchkit.NewReceiver()
	slow.Delay = 200 * time.Millisecond
	defer slow.Srv.Close()
	fast := benchkit.NewReceiver()
	defer fast.Srv.Close()
	flood := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: slow, endpoints: 1}
	steady := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: fast, endpoints: 1}
	steady.createAccount(clock.RealClock{})
	flood.setup(clock.RealClock{}) // one manager serves both accounts
	defer flood.stop()
	steady.waitFor("the steady account's warm-up", time.Minute, func() bool {
		steady.enqueue(1, 0)
		time.Sleep(500 * time.Millisecond)
		return fast.Delivered() > 0
	})
	fast.Take()
	warm := fast.Delivered() // Take forgets their times, not their count

	var maxLive atomic.Int64
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(flood.liveDeliveries()); n > maxLive.Load() {
				maxLive.Store(n)
			}
			select {
			case <-sampling:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	cpu0, t0 := benchkit.ProcCPU(), time.Now()
	flood.enqueue(floodN, 0)
	floodCreated := flood.created
	fmt.Printf("  flood of %d events queued in %.1fs\n", floodN, time.Since(t0).Seconds())
	steady.enqueue(300, 10)
	steady.waitFor("the steady account's deliveries", time.Minute, func() bool { return fast.Delivered() >= warm+300 })
	lat, _ := benchkit.Latencies(fast, steady.created)
	fmt.Printf("steady account, 10/s during the flood: %d delivered; event→delivery p50 %v, p99 %v, max %v\n", len(lat),
		benchkit.Pct(lat, 0.5).Round(time.Millisecond), benchkit.Pct(lat, 0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	b.ReportMetric(float64(benchkit.Pct(lat, 0.99).Milliseconds()), "steady-p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "steady-max-ms")
	fmt.Printf("  flood delivered meanwhile: %d in %.1fs\n", slow.Delivered(), time.Since(t0).Seconds())

	flood.created = floodCreated
	flood.waitFor("the flood to drain", 30*time.Minute, func() bool { return slow.Delivered() >= floodN })
	close(sampling)
	<-sampled
	wall := time.Since(t0)
	fmt.Printf("flood: %d delivered in %.1fs = %.1f/s (receiver's pace: 40/s); most WebhookDeliveries in etcd: %d\n",
		slow.Delivered(), wall.Seconds(), float64(slow.Delivered())/wall.Seconds(), maxLive.Load())
	b.ReportMetric(float64(slow.Delivered())/wall.Seconds(), "flood-deliveries/s")
	var cancelled, undispatched int
	if err := storetest.SQL(b, st).QueryRow(context.Background(), `SELECT count(*) FROM webhook_delivery_history
		WHERE account_id IN ($1, $2) AND status <> 'succeeded'`, flood.tenant.Account.ID, steady.tenant.Account.ID).Scan(&cancelled); err != nil {
		b.Fatal(err)
	}
	if err := storetest.SQL(b, st).QueryRow(context.Background(), `SELECT count(*) FROM events
		WHERE account_id IN ($1, $2) AND dispatched_at IS NULL`, flood.tenant.Account.ID, steady.tenant.Account.ID).Scan(&undispatched); err != nil {
		b.Fatal(err)
	}
	twice := slow.Attempts.Load() - int64(slow.Delivered()) + fast.Attempts.Load() - int64(fast.Delivered())
	fmt.Printf("  not succeeded: %d; left undispatched: %d; attempts beyond one per delivery: %d\n", cancelled, undispatched, twice)
	fmt.Printf("  CPU time over %.1fs: %s\n", wall.Seconds(), benchkit.CPUSince(cpu0, wall))
	if cancelled != 0 || undispatched != 0 {
		b.Errorf("%d deliveries did not succeed and %d events were left undispatched", cancelled, undispatched)
	}
}
