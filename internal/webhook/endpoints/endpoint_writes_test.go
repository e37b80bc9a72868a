package endpoints_test

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// TestEndpointWritesReachTheFanOut checks that an event claimed after an endpoint write
// through the API answered is fanned out to what the write made, while the dispatcher's
// endpoints come from a watched cache whose watch may lag: each write is recorded, and the
// cache is read only once it has seen the write.
func TestEndpointWritesReachTheFanOut(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: run via make test")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t)
	kube, st := env.Kube, env.Store
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	svc := &endpoints.Endpoints{Kube: kube, Reader: kube, Store: st, Clock: clk, URLPolicy: send.URLPolicy{Resolver: publicName{}}}

	// The cache watches through a link that delays what kube-apiserver sends by 300 ms, so its
	// watch lags every write by at least that: a fan-out that trusted it at once would miss.
	lagging := rest.CopyConfig(env.ControlPlane.Config)
	lagging.Host = "https://" + slowLink(t, ctx, strings.TrimSuffix(strings.TrimPrefix(lagging.Host, "https://"), "/"), 300*time.Millisecond)
	informers, err := cache.New(lagging, cache.Options{Scheme: env.ControlPlane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watched := &engine.WatchedEndpoints{Cache: informers, Live: kube}
	if err := watched.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	// claim queues one event for the account and claims it, as the dispatcher would.
	claim := func(t *testing.T, acct endpoints.Account) store.PendingEvent {
		t.Helper()
		ev := events.Event{ID: uuid.New(), AccountID: acct.ID, Type: events.CallEnded, Body: []byte(`{}`), CreatedAt: clk.Now()}
		if err := st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.EnqueueEvents(ctx, []events.Event{ev}); return err }); err != nil {
			t.Fatal(err)
		}
		pending, err := st.ClaimEvents(ctx, 1000, clk.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pending {
			if p.ID == ev.ID {
				return p
			}
		}
		t.Fatalf("event %s not claimed", ev.ID)
		return store.PendingEvent{}
	}
	fanOut := func(t *testing.T, acct endpoints.Account, p store.PendingEvent) map[string]switchboardv1alpha1.WebhookEndpoint {
		t.Helper()
		eps, err := watched.ListEndpoints(ctx, acct.PublicID, p.EndpointsWritten)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]switchboardv1alpha1.WebhookEndpoint{}
		for _, ep := range eps {
			out[ep.Name] = ep
		}
		return out
	}
	version := func(t *testing.T, rv string) uint64 {
		t.Helper()
		v, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	name, url, evts := "Hook", "https://hooks.example.com/in", []string{"call.ended"}

	t.Run("an account with no write through the API reads the cache", func(t *testing.T) {
		acct := endpoints.AccountOf(apitest.NewTenant(t, st, plans.Business).Account)
		if p := claim(t, acct); p.EndpointsWritten != (store.EndpointsWritten{}) {
			t.Fatalf("written = %+v, want none", p.EndpointsWritten)
		}
	})

	for round := range 5 {
		acct := endpoints.AccountOf(apitest.NewTenant(t, st, plans.Business).Account)
		ep, _, err := svc.Create(ctx, acct, endpoints.Input{Name: &name, URL: &url, Events: &evts})
		if err != nil {
			t.Fatal(err)
		}
		p := claim(t, acct)
		if p.EndpointsWritten.Pending || p.EndpointsWritten.Version != version(t, ep.ResourceVersion) {
			t.Fatalf("round %d: written = %+v after a creation at version %s", round, p.EndpointsWritten, ep.ResourceVersion)
		}
		if _, ok := fanOut(t, acct, p)[ep.Name]; !ok {
			t.Fatalf("round %d: the event claimed after the creation answered is not fanned out to the new endpoint", round)
		}

		newURL := "https://hooks.example.com/moved-" + strconv.Itoa(round)
		updated, _, err := svc.Update(ctx, acct.PublicID, ep.Name, endpoints.Input{URL: &newURL})
		if err != nil {
			t.Fatal(err)
		}
		p = claim(t, acct)
		if p.EndpointsWritten.Version != version(t, updated.ResourceVersion) {
			t.Fatalf("round %d: written = %+v after a change at version %s", round, p.EndpointsWritten, updated.ResourceVersion)
		}
		if got := fanOut(t, acct, p)[ep.Name].Spec.URL; got != newURL {
			t.Fatalf("round %d: the event claimed after the change answered goes to %q, want %q", round, got, newURL)
		}

		if err := svc.Delete(ctx, acct.PublicID, ep.Name); err != nil {
			t.Fatal(err)
		}
		p = claim(t, acct)
		if p.EndpointsWritten.Version <= version(t, updated.ResourceVersion) {
			t.Fatalf("round %d: written = %+v after a deletion, want past %s", round, p.EndpointsWritten, updated.ResourceVersion)
		}
		if _, ok := fanOut(t, acct, p)[ep.Name]; ok {
			t.Fatalf("round %d: the event claimed after the deletion answered is still fanned out to the endpoint", round)
		}
	}

	t.Run("the cache is read once it has seen the write", func(t *testing.T) {
		acct := endpoints.AccountOf(apitest.NewTenant(t, st, plans.Business).Account)
		ep, _, err := svc.Create(ctx, acct, endpoints.Input{Name: &name, URL: &url, Events: &evts})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for watched.Seen() < version(t, ep.ResourceVersion) {
			if time.Now().After(deadline) {
				t.Fatalf("the cache has seen version %d, not the creation's %s", watched.Seen(), ep.ResourceVersion)
			}
			time.Sleep(10 * time.Millisecond)
		}
		p := claim(t, acct)
		if !engine.CacheFresh(p.EndpointsWritten, watched.Seen()) {
			t.Fatalf("written %+v, seen %d: the cache should be fresh", p.EndpointsWritten, watched.Seen())
		}
		if _, ok := fanOut(t, acct, p)[ep.Name]; !ok {
			t.Fatal("the cache does not list the endpoint it has seen")
		}
	})

	t.Run("a write under way is read live", func(t *testing.T) {
		acct := endpoints.AccountOf(apitest.NewTenant(t, st, plans.Business).Account)
		if err := st.BeginEndpointWrite(ctx, acct.PublicID); err != nil {
			t.Fatal(err)
		}
		if p := claim(t, acct); !p.EndpointsWritten.Pending || engine.CacheFresh(p.EndpointsWritten, watched.Seen()) {
			t.Fatalf("written = %+v during a write, want pending and read live", p.EndpointsWritten)
		}
		if err := st.EndEndpointWrite(ctx, acct.PublicID, 7); err != nil {
			t.Fatal(err)
		}
		if err := st.EndEndpointWrite(ctx, acct.PublicID, 5); err != nil {
			t.Fatal(err)
		}
		if p := claim(t, acct); p.EndpointsWritten != (store.EndpointsWritten{Version: 7}) {
			t.Fatalf("written = %+v after versions 7 then 5, want 7 kept", p.EndpointsWritten)
		}
	})
}

// slowLink forwards TCP connections to upstream, delivering what upstream sends delay after
// it arrived (in order), and returns its address.
func slowLink(t *testing.T, ctx context.Context, upstream string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := (&net.Dialer{}).DialContext(ctx, "tcp", upstream)
			if err != nil {
				_ = down.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() {
				type chunk struct {
					at   time.Time
					data []byte
				}
				chunks := make(chan chunk, 1024)
				go func() {
					defer close(chunks)
					for {
						buf := make([]byte, 32<<10)
						n, err := up.Read(buf)
						if n > 0 {
							chunks <- chunk{time.Now(), buf[:n]}
						}
						if err != nil {
							return
						}
					}
				}()
				for c := range chunks {
					time.Sleep(time.Until(c.at.Add(delay)))
					if _, err := down.Write(c.data); err != nil {
						break
					}
				}
				_ = down.Close()
			}()
		}
	}()
	return ln.Addr().String()
}
