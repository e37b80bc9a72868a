/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// e2eToken is the platform token of the end-to-end benchmark's ingestion API.
const e2eToken = "platform-token-for-the-benchmark"

// e2eRun is one case of BenchmarkWebhookEndToEnd: the platform reports calls through the
// ingestion API, each queues call.ended, and the engine delivers it, signed over HTTPS, to
// a local TLS receiver.
type e2eRun struct {
	*benchRun
	platform string
	number   string
	mu       sync.Mutex
	reported map[string]time.Time // call public id → when its report was answered
	offered  float64              // reports a second achieved
}

func (r *e2eRun) report(ctx context.Context, hc *http.Client, i int) {
	body, _ := json.Marshal(map[string]any{"platform_ref": fmt.Sprintf("bench-%s-%d", r.ns, i), "to": r.number,
		"from": "+447700900123", "disposition": "answered", "started_at": time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339),
		"duration_seconds": 95, "talk_seconds": 80})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.platform+"/platform/v1/calls", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		r.b.Errorf("report %d: %v", i, err)
		return
	}
	defer resp.Body.Close()
	var receipt struct {
		CallID string   `json:"call_public_id"`
		Events []string `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&receipt); err != nil || resp.StatusCode != http.StatusCreated ||
		len(receipt.Events) != 1 || receipt.Events[0] != events.CallEnded {
		r.b.Errorf("report %d: %d %+v %v", i, resp.StatusCode, receipt, err)
		return
	}
	r.mu.Lock()
	r.reported[receipt.CallID] = sent // event→delivery is measured from the report's start
	r.mu.Unlock()
}

// warmUp reports one call and waits for its deliveries, then forgets them: the case starts
// once the manager it started has synced and delivered, and the stack has answered a report,
// as each peer's processes run through all the cases and get one warm-up delivery before
// them (test/bench/peers). Without it the first 200 ms of events wait for the new manager.
func (r *e2eRun) warmUp() {
	r.report(context.Background(), http.DefaultClient, -1)
	r.waitFor("the warm-up delivery", time.Minute, func() bool { return r.rcv.Delivered() >= r.endpointCount() })
	r.rcv.Take()
	r.mu.Lock()
	r.reported = map[string]time.Time{}
	r.mu.Unlock()
}

// offer reports n calls (see benchkit.Offer); offered is the rate achieved.
func (r *e2eRun) offer(n, rate int) {
	r.offered = benchkit.Offer(n, rate, r.report)
}

// created maps each delivered event to the time its call was reported.
func (r *e2eRun) created() {
	rows, err := storetest.SQL(r.b, r.st).Query(context.Background(), `SELECT e.id, c.public_id FROM events e JOIN calls c ON c.id = e.call_id
		WHERE e.account_id = $1`, r.tenant.Account.ID)
	if err != nil {
		r.b.Fatal(err)
	}
	defer rows.Close()
	r.benchRun.created = map[uuid.UUID]time.Time{}
	for rows.Next() {
		var (
			id   uuid.UUID
			call string
		)
		if err := rows.Scan(&id, &call); err != nil {
			r.b.Fatal(err)
		}
		if at, ok := r.reported[call]; ok { // not the warm-up's
			r.benchRun.created[id] = at
		}
	}
}

// BenchmarkWebhookEndToEnd measures delivery as an integrator's events really flow: the
// platform reports each call through the ingestion API, the report queues call.ended, and
// the delivery engine sends it signed over HTTPS to a local TLS receiver; kube-apiserver,
// etcd and PostgreSQL run on this machine. event→delivery runs from the start of the report
// to the receiver's 2xx. Run with `make bench`; figures in docs/benchmarks.md.
func BenchmarkWebhookEndToEnd(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	cp, kube, st := startBenchStack(b)
	platform := startPlatform(b, st)
	// BENCH_E2E_OTHER_ACCOUNTS runs the cases beside that many other accounts with five
	// endpoints each (made as BenchmarkWebhookEndpointScale makes them), to compare with the
	// one-account figures.
	others := envInt("BENCH_E2E_OTHER_ACCOUNTS", 0)
	if others > 0 {
		idle := benchkit.NewReceiver()
		defer idle.Srv.Close()
		t0 := time.Now()
		makeScaleAccounts(b, kube, st, others, 5, func(int) string { return idle.Srv.URL })
		fmt.Printf("  beside %d other accounts with %d endpoints, made in %.1fs\n", others, others*5, time.Since(t0).Seconds())
	}

	number := 0
	run := func(name string, endpoints, n, rate int) {
		b.Run(name, func(b *testing.B) {
			r := &e2eRun{benchRun: &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver(), endpoints: endpoints},
				platform: platform.URL, reported: map[string]time.Time{}}
			defer r.rcv.Srv.Close()
			r.setup(clock.RealClock{})
			defer r.stop()
			number++
			r.number = fmt.Sprintf("+4420794606%02d", number)
			if _, err := st.CreateNumber(context.Background(), store.NewNumber{AccountID: r.tenant.Account.ID, E164: r.number, Label: "Bench"}); err != nil {
				b.Fatal(err)
			}
			r.warmUp()
			if others > 0 {
				// A new manager reconciles every endpoint once and lists them all: work a
				// replica does at its start, not per delivery.
				fmt.Printf("  settled after the manager's start in %.1fs\n", benchkit.Settle(0.1, 3*time.Second, 10*time.Minute).Seconds())
			}
			statements := startPGStatements(b, st)
			cpu0, t0 := benchkit.ProcCPU(), time.Now()
			r.offer(n, rate)
			fmt.Printf("  reports answered: %.0f/s\n", r.offered)
			r.waitFor("every delivery", 30*time.Minute, func() bool { return r.rcv.Delivered() >= endpoints*(n+1) })
			wall := time.Since(t0)
			cpu, cpuMS := benchkit.CPUPerDelivery(cpu0, endpoints*n)
			fmt.Printf("  CPU per delivery: %s\n", cpu)
			b.ReportMetric(cpuMS, "cpu-ms/delivery")
			fmt.Printf("  CPU time over %.1fs: %s\n", wall.Seconds(), benchkit.CPUSince(cpu0, wall))
			r.created()
			how := fmt.Sprintf("%d calls reported at once, %d endpoint(s)", n, endpoints)
			if rate > 0 {
				how = fmt.Sprintf("%d calls reported at %d/s, %d endpoint(s)", n, rate, endpoints)
			}
			r.benchRun.report(how, n)
			fmt.Printf("  WebhookDeliveries in etcd after: %d\n", r.liveDeliveries())
			statements.print(n)
		})
	}
	for _, c := range benchkit.EndToEndCases(benchkit.Events()) { // BENCH_EVENTS scales the cases down
		run(c.Name, c.Endpoints, c.N, c.Rate)
	}
	// BENCH_E2E_RATE adds 10 s paced at that rate to one endpoint (e.g. half the burst's
	// saturation rate, for the p99 goal there).
	if rate, err := strconv.Atoi(os.Getenv("BENCH_E2E_RATE")); err == nil && rate > 0 {
		run(fmt.Sprintf("paced-%d-1-endpoint", rate), 1, 10*rate, rate)
	}
}
