/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
)

func TestOutpostVerifySignature(t *testing.T) {
	d := &OutpostDestination{Secret: "s3cret"}
	body := []byte(`{"id":"evt"}`)
	sign := func(secret string, body []byte) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hex.EncodeToString(mac.Sum(nil))
	}
	for _, c := range []struct {
		name   string
		header string
		ok     bool
	}{
		{"signed with the destination's secret", "v0=" + sign("s3cret", body), true},
		{"during a rotation, the current secret second", "v0=" + sign("previous", body) + "," + sign("s3cret", body), true},
		{"another secret", "v0=" + sign("other", body), false},
		{"another body", "v0=" + sign("s3cret", []byte(`{"id":"other"}`)), false},
		{"no scheme", sign("s3cret", body), false},
		{"empty", "", false},
	} {
		if err := d.VerifySignature(c.header, body); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestOutpostDelivers starts Outpost as the benchmark does and checks what the benchmark
// relies on: an event published to one destination reaches only it, and one published to
// the tenant reaches every destination, each signed with its destination's secret, with the
// event's id in benchkit.DeliveryHeader, over TLS verified against the receiver's CA.
func TestOutpostDelivers(t *testing.T) {
	bin := os.Getenv("OUTPOST_BIN")
	if bin == "" {
		t.Skip("OUTPOST_BIN is not set: point it at the outpost CLI built from its source, outpost-server next to it (docs/benchmarks.md)")
	}
	ctx := context.Background()
	ca, err := WriteReceiverCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	op, err := StartOutpost(ctx, bin, OutpostConfig{MaxConcurrency: 4, CAFile: ca, EventIDHeader: benchkit.DeliveryHeader})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Stop)

	type delivery struct {
		path, id, signature string
		body                []byte
	}
	var mu sync.Mutex
	var got []delivery
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		got = append(got, delivery{req.URL.Path, req.Header.Get(benchkit.DeliveryHeader), req.Header.Get(OutpostSignatureHeader), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	tenant, err := op.NewTenant(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	dests := map[string]*OutpostDestination{}
	for _, path := range []string{"/ep/0", "/ep/1"} {
		if dests[path], err = tenant.NewDestination(ctx, "test"+path[len(path)-1:], srv.URL+path); err != nil {
			t.Fatal(err)
		}
	}
	one, all := uuid.NewString(), uuid.NewString()
	if err := tenant.Publish(ctx, http.DefaultClient, dests["/ep/1"], false, one, callEnded(one, 0)); err != nil {
		t.Fatal(err)
	}
	if err := tenant.Publish(ctx, http.DefaultClient, nil, true, all, callEnded(all, 1)); err != nil {
		t.Fatal(err)
	}

	want := map[string]bool{one + "/ep/1": true, all + "/ep/0": true, all + "/ep/1": true}
	waitForDeliveries(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}, len(want))
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, d := range got {
		key := d.id + d.path
		if !want[key] || seen[key] {
			t.Errorf("unexpected delivery of event %q to %s", d.id, d.path)
			continue
		}
		seen[key] = true
		if err := dests[d.path].VerifySignature(d.signature, d.body); err != nil {
			t.Errorf("event %s to %s: %v", d.id, d.path, err)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no delivery %s", key)
		}
	}
}
