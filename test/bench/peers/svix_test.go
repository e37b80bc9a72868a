/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

func TestSvixVerifySignature(t *testing.T) {
	key := []byte("0123456789abcdefghijklmn")
	e := &SvixEndpoint{Secret: "whsec_" + base64.StdEncoding.EncodeToString(key)}
	body := []byte(`{"id":"evt"}`)
	sign := func(key []byte, msgID, ts string, body []byte) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID + "." + ts + "."))
		mac.Write(body)
		return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	headers := func(msgID, ts, sig string) http.Header {
		h := http.Header{}
		h.Set("svix-id", msgID)
		h.Set("svix-timestamp", ts)
		h.Set("svix-signature", sig)
		return h
	}
	good := sign(key, "msg_1", "1700000000", body)
	for _, c := range []struct {
		name string
		h    http.Header
		ok   bool
	}{
		{"signed with the endpoint's secret", headers("msg_1", "1700000000", good), true},
		{"during a rotation, the current secret second", headers("msg_1", "1700000000",
			sign([]byte("previous-key-of-24-bytes"), "msg_1", "1700000000", body)+" "+good), true},
		{"another secret", headers("msg_1", "1700000000", sign([]byte("another-key-of-24-bytes!"), "msg_1", "1700000000", body)), false},
		{"another message id", headers("msg_2", "1700000000", good), false},
		{"another timestamp", headers("msg_1", "1700000001", good), false},
		{"another version", headers("msg_1", "1700000000", strings.Replace(good, "v1,", "v1a,", 1)), false},
		{"no svix-id", headers("", "1700000000", good), false},
		{"empty", headers("msg_1", "1700000000", ""), false},
	} {
		if err := e.VerifySignature(c.h, body); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if err := e.VerifySignature(headers("msg_1", "1700000000", good), []byte(`{"id":"other"}`)); err == nil {
		t.Error("another body verifies")
	}
}

func TestSvixEventID(t *testing.T) {
	h := http.Header{}
	h.Set("svix-id", "msg_1")
	id := uuid.NewString()
	if got := SvixEventID(h, callEnded(id, 0)); got != id {
		t.Errorf("SvixEventID(delivery of %s) = %q", id, got)
	}
	if got := SvixEventID(http.Header{}, callEnded(id, 0)); got != "" {
		t.Errorf("SvixEventID(no svix-id) = %q, want \"\" (not a delivery)", got)
	}
	if got := SvixEventID(h, []byte("not json")); got != "" {
		t.Errorf("SvixEventID(not JSON) = %q, want \"\"", got)
	}
}

// TestSvixDelivers starts Svix as the benchmark does and checks what the benchmark relies
// on: a message to an application reaches only that application's endpoints (one, or each
// of several), each signed with its endpoint's secret, with svix-id Svix's message id and the
// event's id in the payload, over TLS verified against the receiver's CA.
func TestSvixDelivers(t *testing.T) {
	bin := os.Getenv("SVIX_BIN")
	if bin == "" {
		t.Skip("SVIX_BIN is not set: point it at svix-server built from its source (docs/benchmarks.md, \"Svix\")")
	}
	ctx := context.Background()
	ca, err := WriteReceiverCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sv, err := StartSvix(ctx, bin, SvixConfig{CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sv.Stop)

	type delivery struct {
		path, msgID string
		h           http.Header
		body        []byte
	}
	var mu sync.Mutex
	var got []delivery
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		got = append(got, delivery{req.URL.Path, req.Header.Get("svix-id"), req.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	// "one" has one endpoint, /ep/1; "many" has /ep/0 and /ep/2.
	one, err := sv.NewApp(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	many, err := sv.NewApp(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	eps := map[string]*SvixEndpoint{}
	for path, app := range map[string]*SvixApp{"/ep/1": one, "/ep/0": many, "/ep/2": many} {
		if eps[path], err = app.NewEndpoint(ctx, srv.URL+path); err != nil {
			t.Fatal(err)
		}
	}
	toOne, toMany := uuid.NewString(), uuid.NewString()
	msgOne, err := one.Send(ctx, http.DefaultClient, toOne, callEnded(toOne, 0))
	if err != nil {
		t.Fatal(err)
	}
	msgMany, err := many.Send(ctx, http.DefaultClient, toMany, callEnded(toMany, 1))
	if err != nil {
		t.Fatal(err)
	}

	msgOf := map[string]string{toOne: msgOne, toMany: msgMany}
	want := map[string]bool{toOne + "/ep/1": true, toMany + "/ep/0": true, toMany + "/ep/2": true}
	waitForDeliveries(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}, len(want))
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, d := range got {
		id := SvixEventID(d.h, d.body)
		key := id + d.path
		if !want[key] || seen[key] {
			t.Errorf("unexpected delivery of event %q to %s", id, d.path)
			continue
		}
		seen[key] = true
		if d.msgID != msgOf[id] {
			t.Errorf("event %s to %s: svix-id %q, want the message's id %q", id, d.path, d.msgID, msgOf[id])
		}
		if err := eps[d.path].VerifySignature(d.h, d.body); err != nil {
			t.Errorf("event %s to %s: %v", id, d.path, err)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no delivery %s", key)
		}
	}
}
