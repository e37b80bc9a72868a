/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
)

// BenchmarkWebhookIdle measures what the webhook machinery costs with nothing to deliver:
// the controllers and the dispatcher run against one endpoint, no event is queued, and the
// CPU time of each process (this one, PostgreSQL, kube-apiserver, etcd) is read from /proc
// over BENCH_IDLE_SECONDS (default 60) after a 5 s settle.
func BenchmarkWebhookIdle(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	seconds, err := strconv.Atoi(os.Getenv("BENCH_IDLE_SECONDS"))
	if err != nil || seconds <= 0 {
		seconds = 60
	}
	cp, kube, st := startBenchStack(b)
	r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver(), endpoints: 1}
	defer r.rcv.Srv.Close()
	r.setup(clock.RealClock{})
	defer r.stop()
	time.Sleep(5 * time.Second)
	cpu0, t0 := benchkit.ProcCPU(), time.Now()
	time.Sleep(time.Duration(seconds) * time.Second)
	wall := time.Since(t0)
	after := benchkit.ProcCPU()
	var total time.Duration
	for n := range after {
		total += after[n] - cpu0[n]
	}
	fmt.Printf("  idle over %.0fs: %.3f cores in all; %s\n", wall.Seconds(), total.Seconds()/wall.Seconds(), benchkit.CPUSince(cpu0, wall))
	b.ReportMetric(total.Seconds()/wall.Seconds(), "cores")
	self := after[benchkit.SelfName] - cpu0[benchkit.SelfName]
	b.ReportMetric(self.Seconds()/wall.Seconds(), "manager-cores")
}
