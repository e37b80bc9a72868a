/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchpeer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/benchkit"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// stallTimeout fails a case whose deliveries stop arriving, rather than waiting for ever.
const stallTimeout = 2 * time.Minute

// callEnded is a call.ended payload of the size and shape Switchboard sends.
func callEnded(id string, i int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "call.ended", "created_at": "2026-11-24T01:00:00Z",
		"data": map[string]any{"call": map[string]any{"id": fmt.Sprintf("call_bench%08d", i), "direction": "inbound",
			"from": "+447700900123", "to": "+442079460601", "number": map[string]any{"id": "num_bench", "e164": "+442079460601",
				"label": "Bench"}, "disposition": "answered", "started_at": "2026-11-24T00:58:00Z", "ended_at": "2026-11-24T00:59:35Z",
			"duration_seconds": 95, "talk_seconds": 80, "tags": []string{}, "links": map[string]any{
				"api": "https://api.example.test/v1/calls/call_bench", "dashboard": "https://app.example.test/calls/call_bench"}}}})
	return b
}

// BenchmarkConvoyEndToEnd measures Convoy, built from its source (CONVOY_BIN, see
// hack/bench/convoy.sh), with the harness and cases of controllers' BenchmarkWebhookEndToEnd:
// events are made through Convoy's ingestion API (POST /api/v1/projects/{id}/events, or
// /events/fanout for five endpoints), Convoy delivers them signed (HMAC-SHA256) over HTTPS
// to the same local TLS receiver, and event→delivery runs from the start of the ingestion
// request to the receiver's 2xx. PostgreSQL, Redis, `convoy server` and `convoy agent` run
// on this machine; the CPU time of each is read from /proc. Run with `make bench-peer`.
func BenchmarkConvoyEndToEnd(b *testing.B) {
	bin := os.Getenv("CONVOY_BIN")
	if bin == "" {
		b.Skip("CONVOY_BIN is not set: build Convoy with hack/bench/convoy.sh and run via make bench-peer (docs/benchmarks.md)")
	}
	benchkit.SelfName = "harness" // the load generator and the receiver
	ctx := context.Background()
	cv, err := StartConvoy(ctx, bin, Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cv.Stop)
	pool, err := pgxpool.New(ctx, cv.Postgres())
	if err != nil {
		b.Fatal(err)
	}
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	benchkit.FindPostmaster(backend)
	pool.Close()
	// One project for every case: Convoy's community licence allows one.
	p, err := cv.NewProject(ctx, "bench", len(webhooks.RetryDelays))
	if err != nil {
		b.Fatal(err)
	}

	warmUp(b, p)

	for _, c := range benchkit.EndToEndCases(benchkit.Events()) { // BENCH_EVENTS scales the cases down
		b.Run(c.Name, func(b *testing.B) {
			rcv := benchkit.NewReceiver()
			defer rcv.Srv.Close()
			eps := make([]*Endpoint, c.Endpoints)
			for i := range eps {
				var err error
				if eps[i], err = p.NewEndpoint(ctx, fmt.Sprintf("%s-%d", c.Name, i), fmt.Sprintf("%s/ep/%d", rcv.Srv.URL, i),
					"owner-"+c.Name); err != nil {
					b.Fatal(err)
				}
			}
			ids := make([]uuid.UUID, c.N)
			for i := range ids {
				ids[i] = uuid.New()
			}
			var mu sync.Mutex
			created := make(map[uuid.UUID]time.Time, c.N)
			cpu0, t0 := benchkit.ProcCPU(), time.Now()
			offered := benchkit.Offer(c.N, c.Rate, func(ctx context.Context, hc *http.Client, i int) {
				sent := time.Now() // event→delivery is measured from the request's start
				if err := p.SendEvent(ctx, hc, eps[0], c.Endpoints > 1, ids[i].String(), callEnded(ids[i].String(), i)); err != nil {
					b.Errorf("event %d: %v", i, err)
					return
				}
				mu.Lock()
				created[ids[i]] = sent
				mu.Unlock()
			})
			fmt.Printf("  events accepted: %.0f/s\n", offered)
			want := c.Endpoints * c.N
			if err := waitDelivered(rcv, want); err != nil {
				b.Fatal(err)
			}
			wall := time.Since(t0)
			cpu, cpuMS := benchkit.CPUPerDelivery(cpu0, want)
			fmt.Printf("  CPU per delivery: %s\n", cpu)
			b.ReportMetric(cpuMS, "cpu-ms/delivery")
			fmt.Printf("  CPU time over %.1fs: %s\n", wall.Seconds(), benchkit.CPUSince(cpu0, wall))
			how := fmt.Sprintf("Convoy: %d events at once, %d endpoint(s)", c.N, c.Endpoints)
			if c.Rate > 0 {
				how = fmt.Sprintf("Convoy: %d events at %d/s, %d endpoint(s)", c.N, c.Rate, c.Endpoints)
			}
			benchkit.Report(b, how, rcv, created)
		})
	}
	fmt.Printf("  peak resident memory: %s\n", benchkit.PeakRSS())
}

// waitDelivered waits until the receiver has want deliveries, and fails when none arrives
// for stallTimeout.
func waitDelivered(rcv *benchkit.Receiver, want int) error {
	last, progress := rcv.Delivered(), time.Now()
	for last < want {
		time.Sleep(100 * time.Millisecond)
		if n := rcv.Delivered(); n > last {
			last, progress = n, time.Now()
		} else if time.Since(progress) > stallTimeout {
			return fmt.Errorf("stalled: %d of %d deliveries received, none in the last %v", last, want, stallTimeout)
		}
	}
	return nil
}

// warmUp delivers one event before the cases, so that the first case does not measure
// Convoy's start (its first delivery takes seconds longer than the rest), and checks that
// Convoy signs as configured: HMAC-SHA256 over the timestamp and the body.
func warmUp(b *testing.B, p *Project) {
	ctx := context.Background()
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.Header.Get(benchkit.DeliveryHeader) != "" && len(got) == 0 {
			got <- req
			bodies <- body
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ep, err := p.NewEndpoint(ctx, "warm-up", srv.URL+"/ep/0", "owner-warm-up")
	if err != nil {
		b.Fatal(err)
	}
	id := uuid.NewString()
	if err := p.SendEvent(ctx, http.DefaultClient, ep, false, id, callEnded(id, 0)); err != nil {
		b.Fatal(err)
	}
	select {
	case req := <-got:
		if err := ep.VerifySignature(req.Header.Get("X-Convoy-Signature"), <-bodies); err != nil {
			b.Fatal("warm-up: ", err)
		}
	case <-time.After(stallTimeout):
		b.Fatalf("warm-up: no delivery in %v", stallTimeout)
	}
}
