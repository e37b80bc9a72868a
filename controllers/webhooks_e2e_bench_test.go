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
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/controlplane"
	"github.com/switchboard-dev/switchboard/internal/events"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
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

// offer reports n calls: all at once from 32 clients (rate 0), or rate a second from up to
// 32 at a time (a platform's bounded client; unbounded, the reports would hold every pool
// connection the dispatcher needs). offered is the rate achieved.
func (r *e2eRun) offer(n, rate int) {
	start := time.Now()
	defer func() { r.offered = float64(n) / time.Since(start).Seconds() }()
	ctx := context.Background()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	if rate == 0 {
		next := make(chan int)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					r.report(ctx, hc, i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
	} else {
		tick := time.Second / time.Duration(rate)
		clients := make(chan struct{}, 32)
		for i := range n {
			time.Sleep(time.Until(start.Add(time.Duration(i) * tick)))
			clients <- struct{}{}
			wg.Add(1)
			go func() { defer wg.Done(); defer func() { <-clients }(); r.report(ctx, hc, i) }()
		}
	}
	wg.Wait()
}

// created maps each delivered event to the time its call was reported.
func (r *e2eRun) created() {
	rows, err := r.st.Pool.Query(context.Background(), `SELECT e.id, c.public_id FROM events e JOIN calls c ON c.id = e.call_id
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
		r.benchRun.created[id] = r.reported[call]
	}
}

// cpuPerDelivery formats each process's CPU time per delivery since before, and their sum.
func cpuPerDelivery(before map[string]time.Duration, deliveries int) string {
	after := procCPU()
	names := make([]string, 0, len(after))
	var total time.Duration
	for n := range after {
		names = append(names, n)
		total += after[n] - before[n]
	}
	sort.Slice(names, func(i, j int) bool { return after[names[i]]-before[names[i]] > after[names[j]]-before[names[j]] })
	per := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1000/float64(deliveries)) }
	parts := []string{}
	for _, n := range names {
		if d := after[n] - before[n]; d > 0 {
			parts = append(parts, n+" "+per(d))
		}
	}
	return fmt.Sprintf("%s in all (%s)", per(total), strings.Join(parts, ", "))
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
	ctrl.SetLogger(logr.Discard())
	b.Cleanup(storetest.Shutdown)
	cp, err := controlplane.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	kube, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	dbURL := storetest.NewDatabaseURL(b)
	st, err := store.Open(context.Background(), dbURL+poolParam(dbURL))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	findPostmaster(st)
	platform := httptest.NewServer(ingest.New(ingest.Config{Token: e2eToken, LinkSigningKey: []byte("a link signing key of 32 bytes!!"),
		Links: events.Links{APIBaseURL: "https://api.example.test", DashboardURL: "https://app.example.test"}, Log: logr.Discard()}, st))
	b.Cleanup(platform.Close)

	number := 0
	run := func(name string, endpoints, n, rate int) {
		b.Run(name, func(b *testing.B) {
			r := &e2eRun{benchRun: &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: newBenchReceiver(), endpoints: endpoints},
				platform: platform.URL, reported: map[string]time.Time{}}
			defer r.rcv.srv.Close()
			r.setup(clock.RealClock{})
			defer r.stop()
			number++
			r.number = fmt.Sprintf("+4420794606%02d", number)
			if _, err := st.CreateNumber(context.Background(), store.NewNumber{AccountID: r.tenant.Account.ID, E164: r.number, Label: "Bench"}); err != nil {
				b.Fatal(err)
			}
			statements := startPGStatements(st)
			cpu0, t0 := procCPU(), time.Now()
			r.offer(n, rate)
			fmt.Printf("  reports answered: %.0f/s\n", r.offered)
			r.waitFor("every delivery", 30*time.Minute, func() bool { return r.rcv.delivered() >= endpoints*n })
			wall := time.Since(t0)
			fmt.Printf("  CPU per delivery: %s\n", cpuPerDelivery(cpu0, endpoints*n))
			fmt.Printf("  CPU time over %.1fs: %s\n", wall.Seconds(), cpuSince(cpu0, wall))
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
	scale := benchEvents() // BENCH_EVENTS scales the cases down (default 10,000: the full cases)
	burst, fan := min(5000, scale), min(1000, scale)
	run("burst-1-endpoint", 1, burst, 0)
	run("paced-200-1-endpoint", 1, min(6000, 30*scale/50), 200)
	run("paced-400-1-endpoint", 1, min(12000, 30*scale/25), 400)
	run("fan-out-5-endpoints", 5, fan, 0)
}
