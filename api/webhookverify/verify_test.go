package webhookverify_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// A receiver built on this package accepts a real delivery and refuses tampering, a wrong
// secret and replays older than five minutes.
func TestVerifierOnRealDeliveries(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	clock := func() time.Time { return now }
	type outcome struct {
		err  error
		body string
	}
	results := make(chan outcome, 1)
	v := webhookverify.Verifier{Secret: "whsec_live", Now: func() time.Time { return clock() }}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := v.Request(r)
		results <- outcome{err, string(body)}
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	sender := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool})
	deliver := func(secret string, sentAt time.Time) (send.Result, outcome) {
		res := sender.Send(context.Background(), send.Request{URL: srv.URL, Secret: secret, EventType: "test",
			EventID: "3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1f34", Body: []byte(`{"event":"test","test":true}`), SentAt: sentAt})
		return res, <-results
	}
	if res, o := deliver("whsec_live", now); !res.OK || o.err != nil || o.body != `{"event":"test","test":true}` {
		t.Errorf("genuine delivery: %+v %+v", res, o)
	}
	if res, o := deliver("whsec_live", now.Add(-4*time.Minute)); !res.OK || o.err != nil {
		t.Errorf("four minutes old: %+v %+v", res, o)
	}
	if res, o := deliver("whsec_wrong", now); res.OK || !errors.Is(o.err, webhookverify.ErrBadSignature) {
		t.Errorf("wrong secret: %+v %+v", res, o)
	}
	if res, o := deliver("whsec_live", now.Add(-6*time.Minute)); res.OK || !errors.Is(o.err, webhookverify.ErrStale) {
		t.Errorf("replayed after six minutes: %+v %+v", res, o)
	}
	if res, o := deliver("whsec_live", now.Add(6*time.Minute)); res.OK || !errors.Is(o.err, webhookverify.ErrStale) {
		t.Errorf("six minutes in the future: %+v %+v", res, o)
	}
}

func TestVerifyRefusesTamperingAndMissingHeaders(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"event":"call.ended"}`)
	h := http.Header{}
	h.Set("X-Service-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("X-Service-Signature", send.Sign("whsec_k", now.Unix(), body))
	v := webhookverify.Verifier{Secret: "whsec_k", Now: func() time.Time { return now }}
	if err := v.Verify(h, body); err != nil {
		t.Fatalf("genuine: %v", err)
	}
	if err := v.Verify(h, []byte(`{"event":"call.ended "}`)); !errors.Is(err, webhookverify.ErrBadSignature) {
		t.Errorf("tampered body: %v", err)
	}
	moved := h.Clone()
	moved.Set("X-Service-Timestamp", strconv.FormatInt(now.Unix()+1, 10))
	if err := v.Verify(moved, body); !errors.Is(err, webhookverify.ErrBadSignature) {
		t.Errorf("changed timestamp: %v", err)
	}
	for _, mut := range []func(http.Header){
		func(h http.Header) { h.Del("X-Service-Signature") },
		func(h http.Header) { h.Del("X-Service-Timestamp") },
	} {
		c := h.Clone()
		mut(c)
		if err := v.Verify(c, body); !errors.Is(err, webhookverify.ErrNoSignature) {
			t.Errorf("missing header: %v", err)
		}
	}
	bad := h.Clone()
	bad.Set("X-Service-Timestamp", "yesterday")
	if err := v.Verify(bad, body); !errors.Is(err, webhookverify.ErrBadTimestamp) {
		t.Errorf("bad timestamp: %v", err)
	}
	notHex := h.Clone()
	notHex.Set("X-Service-Signature", "zz")
	if err := v.Verify(notHex, body); !errors.Is(err, webhookverify.ErrBadSignature) {
		t.Errorf("not hex: %v", err)
	}
}

// A verifier whose secret is empty (an unset environment variable) refuses everything: an
// HMAC keyed with "" is one anybody can compute.
func TestVerifyRefusesAnEmptySecret(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"event":"call.ended"}`)
	h := http.Header{}
	h.Set("X-Service-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("X-Service-Signature", send.Sign("", now.Unix(), body))
	for _, secret := range []string{"", "  "} {
		v := webhookverify.Verifier{Secret: secret, Now: func() time.Time { return now }}
		if err := v.Verify(h, body); !errors.Is(err, webhookverify.ErrNoSecret) {
			t.Errorf("secret %q: %v, want ErrNoSecret", secret, err)
		}
	}
}
