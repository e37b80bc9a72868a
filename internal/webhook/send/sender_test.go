package send_test

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

type seen struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTPS server answering with the given status.
func receiver(t *testing.T, status int) (*httptest.Server, *x509.CertPool, chan seen) {
	t.Helper()
	got := make(chan seen, 10)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), b}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool, got
}

type resolver struct {
	mu sync.Mutex
	ip string
}

func (r *resolver) set(ip string) { r.mu.Lock(); r.ip = ip; r.mu.Unlock() }
func (r *resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return []netip.Addr{netip.MustParseAddr(r.ip)}, nil
}

func port(srv *httptest.Server) string { return srv.URL[strings.LastIndex(srv.URL, ":")+1:] }

var sentAt = time.Unix(1_760_000_000, 0)

func request(url string) send.Request {
	return send.Request{URL: url, Secret: "whsec_abc", EventType: "call.ended",
		EventID: "3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1f34", Body: []byte(`{"event":"call.ended"}`), SentAt: sentAt}
}

func TestSendSignsWithTheSpecHeaders(t *testing.T) {
	srv, pool, got := receiver(t, http.StatusNoContent)
	s := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool})
	res := s.Send(context.Background(), request(srv.URL+"/hooks"))
	if !res.OK || res.StatusCode != 204 || res.Error != "" {
		t.Fatalf("result %+v", res)
	}
	r := <-got
	want := map[string]string{
		"Content-Type": "application/json", "User-Agent": "Service-Webhooks/1", "X-Service-Event": "call.ended",
		"X-Service-Delivery": "3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1f34", "X-Service-Timestamp": "1760000000",
	}
	for k, v := range want {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
	if string(r.body) != `{"event":"call.ended"}` {
		t.Errorf("body %q", r.body)
	}
	// The independent receiver-side verifier accepts it, with the attempt's time as its clock.
	v := webhookverify.Verifier{Secret: "whsec_abc", Now: func() time.Time { return sentAt.Add(time.Minute) }}
	if err := v.Verify(r.header, r.body); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := (webhookverify.Verifier{Secret: "whsec_other", Now: v.Now}).Verify(r.header, r.body); err == nil {
		t.Error("verified with the wrong secret")
	}
}

func TestAny2xxIsSuccessAndEverythingElseFails(t *testing.T) {
	for _, c := range []struct {
		status int
		ok     bool
	}{{200, true}, {201, true}, {202, true}, {204, true}, {299, true}, {400, false}, {404, false}, {410, false}, {500, false}, {503, false}} {
		srv, pool, _ := receiver(t, c.status)
		res := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool}).Send(context.Background(), request(srv.URL))
		if res.OK != c.ok || res.StatusCode != c.status || (c.ok == (res.Error != "")) {
			t.Errorf("status %d: %+v", c.status, res)
		}
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusFound) })
	mux.HandleFunc("/perm", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool})
	for path, code := range map[string]int{"/old": 302, "/perm": 308} {
		res := s.Send(context.Background(), request(srv.URL+path))
		if res.OK || res.StatusCode != code || !strings.Contains(res.Error, "redirects are not followed") {
			t.Errorf("%s: %+v", path, res)
		}
	}
	if followed.Load() != 0 {
		t.Errorf("redirect followed %d times", followed.Load())
	}
}

func TestNoAnswerWithinTheTimeoutFails(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool, Timeout: 300 * time.Millisecond})
	start := time.Now()
	res := s.Send(context.Background(), request(srv.URL))
	if res.OK || res.StatusCode != 0 || !strings.Contains(res.Error, "no answer within 300ms") {
		t.Errorf("result %+v", res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	// The default is the spec's 10 seconds.
	if send.DefaultTimeout != 10*time.Second {
		t.Errorf("default timeout %v", send.DefaultTimeout)
	}
}

func TestUntrustedCertificateFails(t *testing.T) {
	srv, _, _ := receiver(t, 200)
	res := send.NewSender(send.SenderConfig{AllowPrivateTargets: true}).Send(context.Background(), request(srv.URL))
	if res.OK || !strings.Contains(res.Error, "certificate") {
		t.Errorf("result %+v", res)
	}
}

// A name that resolved to a public address when the endpoint was saved and resolves to a
// private one at send time is refused at connect time; nothing reaches the receiver.
func TestSSRFGuardChecksTheAddressAtConnectTime(t *testing.T) {
	srv, pool, got := receiver(t, 200)
	res := &resolver{ip: "93.184.216.34"}
	url := "https://example.com:" + port(srv) + "/hooks" // the test certificate is for example.com
	if err := send.ValidateURL(context.Background(), url, send.URLPolicy{Resolver: res}); err != nil {
		t.Fatalf("saving: %v", err)
	}
	res.set("127.0.0.1")
	guarded := send.NewSender(send.SenderConfig{RootCAs: pool, Resolver: res})
	r := guarded.Send(context.Background(), request(url))
	if r.OK || !strings.Contains(r.Error, "not on the public internet") {
		t.Errorf("re-resolved to loopback: %+v", r)
	}
	for _, ip := range []string{"10.0.0.1", "169.254.169.254", "100.64.0.1", "::1", "0.0.0.0"} {
		res.set(ip)
		if r := guarded.Send(context.Background(), request(url)); r.OK || !strings.Contains(r.Error, "not on the public internet") {
			t.Errorf("re-resolved to %s: %+v", ip, r)
		}
	}
	// IP literals are refused too.
	if r := guarded.Send(context.Background(), request(srv.URL)); r.OK || !strings.Contains(r.Error, "not on the public internet") {
		t.Errorf("literal loopback: %+v", r)
	}
	select {
	case <-got:
		t.Fatal("a refused request reached the receiver")
	default:
	}
	// The same name and resolver with the explicit switch reach the receiver.
	res.set("127.0.0.1")
	open := send.NewSender(send.SenderConfig{RootCAs: pool, Resolver: res, AllowPrivateTargets: true})
	if r := open.Send(context.Background(), request(url)); !r.OK {
		t.Errorf("allowed: %+v", r)
	}
}

func TestCancelledContextStopsAnAttempt(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res := send.NewSender(send.SenderConfig{AllowPrivateTargets: true, RootCAs: pool}).Send(ctx, request(srv.URL))
	if res.OK || res.Error != "cancelled" {
		t.Errorf("result %+v", res)
	}
}
