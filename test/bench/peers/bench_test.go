/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
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

// sendFunc makes event i, with id, through a peer's ingestion API.
type sendFunc func(ctx context.Context, hc *http.Client, i int, id string) error

// runCases runs benchkit's end-to-end cases against a peer, as controllers'
// BenchmarkWebhookEndToEnd runs them against Switchboard: for each case a new receiver,
// setUp makes the case's endpoints on it (paths /ep/0 ... /ep/N-1) and returns how to make
// an event; the load generator makes the events; event→delivery runs from the start of each
// request to the receiver's 2xx, and the CPU time of every process is read from /proc.
// rcvOpts configure each case's receiver (how it finds a delivery's event id).
func runCases(b *testing.B, peer string, setUp func(b *testing.B, c benchkit.Case, rcv *benchkit.Receiver) sendFunc,
	rcvOpts ...benchkit.ReceiverOption) {
	for _, c := range benchkit.EndToEndCases(benchkit.Events()) { // BENCH_EVENTS scales the cases down
		b.Run(c.Name, func(b *testing.B) {
			rcv := benchkit.NewReceiver(rcvOpts...)
			defer rcv.Srv.Close()
			send := setUp(b, c, rcv)
			ids := make([]uuid.UUID, c.N)
			for i := range ids {
				ids[i] = uuid.New()
			}
			var mu sync.Mutex
			created := make(map[uuid.UUID]time.Time, c.N)
			cpu0, t0 := benchkit.ProcCPU(), time.Now()
			offered := benchkit.Offer(c.N, c.Rate, func(ctx context.Context, hc *http.Client, i int) {
				sent := time.Now() // event→delivery is measured from the request's start
				if err := send(ctx, hc, i, ids[i].String()); err != nil {
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
			how := fmt.Sprintf("%s: %d events at once, %d endpoint(s)", peer, c.N, c.Endpoints)
			if c.Rate > 0 {
				how = fmt.Sprintf("%s: %d events at %d/s, %d endpoint(s)", peer, c.N, c.Rate, c.Endpoints)
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

// warmUp delivers one event before the cases, so that the first case does not measure the
// peer's start (a first delivery can take seconds longer than the rest), and checks the
// delivery: deliver makes an endpoint at url, sends one event with id through it and
// returns how to verify the delivery's signature; the delivery must carry id in
// benchkit.DeliveryHeader, where the receiver of the cases reads it.
func warmUp(b *testing.B, deliver func(ctx context.Context, url, id string) (verify func(http.Header, []byte) error, err error)) {
	warmUpKeyed(b, benchkit.DeliveryHeaderID, deliver)
}

// warmUpKeyed is warmUp for a peer whose deliveries carry the event's id where eventID finds
// it (as the receiver of its cases is keyed, benchkit.KeyedBy).
func warmUpKeyed(b *testing.B, eventID benchkit.EventIDFunc,
	deliver func(ctx context.Context, url, id string) (verify func(http.Header, []byte) error, err error)) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if eventID(req.Header, body) != "" && len(got) == 0 {
			got <- req
			bodies <- body
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	id := uuid.NewString()
	verify, err := deliver(context.Background(), srv.URL+"/ep/0", id)
	if err != nil {
		b.Fatal("warm-up: ", err)
	}
	select {
	case req := <-got:
		body := <-bodies
		if got := eventID(req.Header, body); got != id {
			b.Fatalf("warm-up: the delivery carries event id %q, want %q", got, id)
		}
		if err := verify(req.Header, body); err != nil {
			b.Fatal("warm-up: ", err)
		}
	case <-time.After(stallTimeout):
		b.Fatalf("warm-up: no delivery in %v", stallTimeout)
	}
}

// waitForDeliveries waits until count reaches want, for a minute at most, and then half a
// second more: room for a delivery that should not come.
func waitForDeliveries(count func() int, want int) {
	deadline := time.Now().Add(time.Minute)
	for count() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
}
