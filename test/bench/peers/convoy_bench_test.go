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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
)

// BenchmarkConvoyEndToEnd measures Convoy, built from its source (CONVOY_BIN), with the
// harness and cases of controllers' BenchmarkWebhookEndToEnd:
// events are made through Convoy's ingestion API (POST /api/v1/projects/{id}/events, or
// /events/fanout for five endpoints), Convoy delivers them signed (HMAC-SHA256) over HTTPS
// to the same local TLS receiver, and event→delivery runs from the start of the ingestion
// request to the receiver's 2xx. PostgreSQL, Redis, `convoy server` and `convoy agent` run
// on this machine; the CPU time of each is read from /proc. Run with `make bench-peer`.
func BenchmarkConvoyEndToEnd(b *testing.B) {
	bin := os.Getenv("CONVOY_BIN")
	if bin == "" {
		b.Skip("CONVOY_BIN is not set: point it at a convoy binary built from its source and run via make bench-peer (docs/benchmarks.md)")
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
	p, err := cv.NewProject(ctx, "bench", len(send.RetryDelays))
	if err != nil {
		b.Fatal(err)
	}

	warmUp(b, func(ctx context.Context, url, id string) (func(http.Header, []byte) error, error) {
		ep, err := p.NewEndpoint(ctx, "warm-up", url, "owner-warm-up")
		if err != nil {
			return nil, err
		}
		if err := p.SendEvent(ctx, http.DefaultClient, ep, false, id, callEnded(id, 0)); err != nil {
			return nil, err
		}
		// HMAC-SHA256 over the timestamp and the body, as the project is configured.
		return func(h http.Header, body []byte) error { return ep.VerifySignature(h.Get("X-Convoy-Signature"), body) }, nil
	})

	runCases(b, "Convoy", func(b *testing.B, c benchkit.Case, rcv *benchkit.Receiver) sendFunc {
		eps := make([]*Endpoint, c.Endpoints)
		for i := range eps {
			var err error
			if eps[i], err = p.NewEndpoint(ctx, fmt.Sprintf("%s-%d", c.Name, i), fmt.Sprintf("%s/ep/%d", rcv.Srv.URL, i),
				"owner-"+c.Name); err != nil {
				b.Fatal(err)
			}
		}
		return func(ctx context.Context, hc *http.Client, i int, id string) error {
			return p.SendEvent(ctx, hc, eps[0], c.Endpoints > 1, id, callEnded(id, i))
		}
	})
}
