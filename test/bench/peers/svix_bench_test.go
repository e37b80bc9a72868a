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

// BenchmarkSvixEndToEnd measures Svix's open-source server, built from its source
// (SVIX_BIN, the svix-server binary), with the harness and cases of controllers'
// BenchmarkWebhookEndToEnd: events are made through Svix's message API (POST
// /api/v1/app/{app}/msg, to an application with one endpoint or, for five endpoints, with
// five endpoints subscribed to the event type), Svix delivers them signed (HMAC-SHA256) over
// HTTPS to the same local TLS receiver, and event→delivery runs from the start of the
// message request to the receiver's 2xx. Svix sends its own message id, not the sender's, in
// its headers: the receiver reads the event's id from the payload (SvixEventID). PostgreSQL,
// Redis and svix-server run on this machine; the CPU time of each is read from /proc. Run
// with `make bench-peer`.
func BenchmarkSvixEndToEnd(b *testing.B) {
	bin := os.Getenv("SVIX_BIN")
	if bin == "" {
		b.Skip("SVIX_BIN is not set: point it at svix-server built from its source and run via make bench-peer (docs/benchmarks.md, \"Svix\")")
	}
	benchkit.SelfName = "harness" // the load generator and the receiver
	ctx := context.Background()
	ca, err := WriteReceiverCA(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	sv, err := StartSvix(ctx, bin, SvixConfig{CAFile: ca})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sv.Stop)
	if err := sv.CountPostgres(); err != nil {
		b.Fatal(err)
	}

	warmUpKeyed(b, SvixEventID, func(ctx context.Context, url, id string) (func(http.Header, []byte) error, error) {
		app, err := sv.NewApp(ctx, "warm-up")
		if err != nil {
			return nil, err
		}
		ep, err := app.NewEndpoint(ctx, url)
		if err != nil {
			return nil, err
		}
		if _, err := app.Send(ctx, http.DefaultClient, id, callEnded(id, 0)); err != nil {
			return nil, err
		}
		return ep.VerifySignature, nil
	})

	runCases(b, "Svix", func(b *testing.B, c benchkit.Case, rcv *benchkit.Receiver) sendFunc {
		app, err := sv.NewApp(ctx, "bench-"+c.Name)
		if err != nil {
			b.Fatal(err)
		}
		for i := range c.Endpoints {
			if _, err := app.NewEndpoint(ctx, fmt.Sprintf("%s/ep/%d", rcv.Srv.URL, i)); err != nil {
				b.Fatal(err)
			}
		}
		return func(ctx context.Context, hc *http.Client, i int, id string) error {
			_, err := app.Send(ctx, hc, id, callEnded(id, i))
			return err
		}
	}, benchkit.KeyedBy(SvixEventID))
}
