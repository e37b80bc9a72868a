/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
)

// outpostConcurrency is the benchmark's DELIVERY_MAX_CONCURRENCY (and LOG_MAX_CONCURRENCY):
// Convoy's default worker count and what Outpost's own load tests run with; its default, 1,
// would send one delivery at a time.
const outpostConcurrency = 100

// BenchmarkOutpostEndToEnd measures Hookdeck Outpost, built from its source (OUTPOST_BIN),
// with the harness and cases of controllers' BenchmarkWebhookEndToEnd: events are made
// through Outpost's publish API (POST /api/v1/publish, to one destination or, for five
// endpoints, to every destination of the tenant), Outpost delivers them signed (HMAC-SHA256) over HTTPS to the same local TLS
// receiver, and event→delivery runs from the start of the publish request to the receiver's
// 2xx. PostgreSQL, Redis, RabbitMQ and Outpost's api, delivery and log services run on this
// machine; the CPU time of each is read from /proc. Run with `make bench-peer`.
func BenchmarkOutpostEndToEnd(b *testing.B) {
	bin := os.Getenv("OUTPOST_BIN")
	if bin == "" {
		b.Skip("OUTPOST_BIN is not set: point it at the outpost CLI built from its source (outpost-server next to it) and run via make bench-peer (docs/benchmarks.md)")
	}
	benchkit.SelfName = "harness" // the load generator and the receiver
	ctx := context.Background()
	ca, err := WriteReceiverCA(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	op, err := StartOutpost(ctx, bin, OutpostConfig{MaxConcurrency: outpostConcurrency, CAFile: ca,
		EventIDHeader: benchkit.DeliveryHeader})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(op.Stop)
	if err := op.CountPostgres(); err != nil {
		b.Fatal(err)
	}

	warmUp(b, func(ctx context.Context, url, id string) (func(http.Header, []byte) error, error) {
		t, err := op.NewTenant(ctx, "warm-up")
		if err != nil {
			return nil, err
		}
		d, err := t.NewDestination(ctx, "warm-up", url)
		if err != nil {
			return nil, err
		}
		if err := t.Publish(ctx, http.DefaultClient, d, false, id, callEnded(id, 0)); err != nil {
			return nil, err
		}
		return func(h http.Header, body []byte) error { return d.VerifySignature(h.Get(OutpostSignatureHeader), body) }, nil
	})

	runCases(b, "Outpost", func(b *testing.B, c benchkit.Case, rcv *benchkit.Receiver) sendFunc {
		t, err := op.NewTenant(ctx, "bench-"+c.Name)
		if err != nil {
			b.Fatal(err)
		}
		dests := make([]*OutpostDestination, c.Endpoints)
		for i := range dests {
			if dests[i], err = t.NewDestination(ctx, fmt.Sprintf("%s-%d", c.Name, i), fmt.Sprintf("%s/ep/%d", rcv.Srv.URL, i)); err != nil {
				b.Fatal(err)
			}
		}
		return func(ctx context.Context, hc *http.Client, i int, id string) error {
			return t.Publish(ctx, hc, dests[0], c.Endpoints > 1, id, callEnded(id, i))
		}
	})
}
