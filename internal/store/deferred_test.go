package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// deferN defers n deliveries to endpoint, a second apart from at, and returns their names
// oldest first.
func deferN(t *testing.T, st *store.Store, acct apitest.Tenant, endpoint string, at time.Time, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		id := uuid.New()
		name := fmt.Sprintf("whdl-%s-%s", endpoint, id.String()[:8])
		if err := st.DeferDelivery(context.Background(), store.DeferredDelivery{DeliveryName: name, AccountID: acct.Account.ID,
			EndpointPublicID: endpoint, EventID: id, OutboxID: id, EventType: "call.ended",
			EventCreatedAt: at.Add(time.Duration(i) * time.Second), DeferredAt: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

func deferredNames(c store.ClaimedDeferred) []string {
	var out []string
	for _, d := range c.Deliveries {
		out = append(out, d.DeliveryName)
	}
	return out
}

// Deferred deliveries are claimed with a lease, oldest first per endpoint and endpoints in
// turn, within each endpoint's room; released ones are taken again at once, expired claims
// after their lease, and deleted ones never.
func TestDeferredDeliveriesClaimLeaseDelete(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	a := deferN(t, st, acct, "whep-a", at, 3)
	b := deferN(t, st, acct, "whep-b", at.Add(time.Minute), 2)
	now := at.Add(2 * time.Hour)
	const lease = time.Minute

	// A repeat of a deferral keeps the first row.
	if err := st.DeferDelivery(ctx, store.DeferredDelivery{DeliveryName: a[0], AccountID: acct.Account.ID, EndpointPublicID: "whep-a",
		EventID: uuid.New(), OutboxID: uuid.New(), EventType: "call.ended", EventCreatedAt: now, DeferredAt: now}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DeferredDeliveries(ctx); err != nil || n != 5 {
		t.Fatalf("DeferredDeliveries = %d, %v; want 5", n, err)
	}

	claim := func(c store.DeferredClaim, at time.Time) store.ClaimedDeferred {
		t.Helper()
		got, err := st.ClaimDeferred(ctx, c, at, lease)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Three places: each endpoint's oldest, then the older of the seconds.
	got := claim(store.DeferredClaim{Limit: 3}, now)
	if want := []string{a[0], b[0], a[1]}; !slices.Equal(deferredNames(got), want) {
		t.Fatalf("first claim took %v, want %v", deferredNames(got), want)
	}
	if d := got.Deliveries[0]; d.AccountPublicID != acct.Account.PublicID || d.EndpointPublicID != "whep-a" || !d.EventCreatedAt.Equal(at) {
		t.Errorf("claimed row %+v lost its account, endpoint or time", d)
	}
	// Claimed rows are held: the next claim takes the rest.
	if want := []string{a[2], b[1]}; !slices.Equal(deferredNames(claim(store.DeferredClaim{Limit: 10}, now)), want) {
		t.Fatalf("second claim took the wrong rows, want %v", want)
	}
	if got := claim(store.DeferredClaim{Limit: 10}, now.Add(lease-time.Second)); len(got.Deliveries) != 0 {
		t.Fatalf("a claim inside the lease took %v", deferredNames(got))
	}
	// Released rows are free at once.
	if err := st.ReleaseDeferred(ctx, []string{a[0], b[0]}); err != nil {
		t.Fatal(err)
	}
	if want := []string{a[0]}; !slices.Equal(deferredNames(claim(store.DeferredClaim{Limit: 10,
		Room: map[store.DeferredEndpoint]int{{AccountPublicID: acct.Account.PublicID, EndpointPublicID: "whep-b"}: 0}}, now)), want) {
		t.Fatalf("with no room for whep-b the claim took the wrong rows, want %v", want)
	}
	if want := []string{b[0]}; !slices.Equal(deferredNames(claim(store.DeferredClaim{Limit: 10}, now)), want) {
		t.Fatalf("the released row of whep-b was not claimed, want %v", want)
	}
	// Past the lease every row not deleted is claimed again; the per-endpoint bound holds.
	if err := st.DeleteDeferred(ctx, []string{a[0], b[0]}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(lease + time.Second)
	if want := []string{a[1], b[1]}; !slices.Equal(deferredNames(claim(store.DeferredClaim{Limit: 10, PerEndpoint: 1}, later)), want) {
		t.Fatalf("after the lease the claim (one an endpoint) took the wrong rows, want %v", want)
	}
	if n, err := st.DeferredDeliveries(ctx); err != nil || n != 3 {
		t.Fatalf("DeferredDeliveries = %d, %v after deleting two; want 3", n, err)
	}
}

// Successive claims that look at one endpoint each go round all endpoints.
func TestClaimDeferredGoesRoundTheEndpoints(t *testing.T) {
	st := storetest.NewStore(t)
	acct := apitest.NewTenant(t, st, plans.Business)
	other := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	a := deferN(t, st, acct, "whep-a", at, 2)
	b := deferN(t, st, acct, "whep-b", at, 2)
	c := deferN(t, st, other, "whep-a", at, 2)
	want := map[string]bool{a[0]: true, b[0]: true, c[0]: true}
	var cursor store.DeferredCursor
	now := at.Add(time.Hour)
	for range 3 {
		got, err := st.ClaimDeferred(context.Background(), store.DeferredClaim{Limit: 1, Endpoints: 1, After: cursor}, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Deliveries) != 1 || !want[got.Deliveries[0].DeliveryName] {
			t.Fatalf("claim after %+v took %v; want one endpoint's oldest not taken yet", cursor, deferredNames(got))
		}
		delete(want, got.Deliveries[0].DeliveryName)
		cursor = got.Next
	}
	// The rows leave with their account.
	sqlExecutor(t, st)(`DELETE FROM accounts WHERE id = $1`, other.Account.ID)
	if n, err := st.DeferredDeliveries(context.Background()); err != nil || n != 4 {
		t.Fatalf("DeferredDeliveries = %d, %v after deleting an account with 2; want 4", n, err)
	}
}

// Replicas claiming at the same moment never take the same row.
func TestClaimDeferredNeverTwice(t *testing.T) {
	st := storetest.NewStore(t)
	acct := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	var all []string
	for i := range 4 {
		all = append(all, deferN(t, st, acct, fmt.Sprintf("whep-%d", i), at, 50)...)
	}
	var (
		mu    sync.Mutex
		taken = map[string]int{}
		wg    sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := st.ClaimDeferred(context.Background(), store.DeferredClaim{Limit: 7}, at.Add(time.Hour), time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got.Deliveries) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got.Deliveries {
					taken[d.DeliveryName]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(taken) != len(all) {
		t.Fatalf("%d of %d rows claimed", len(taken), len(all))
	}
	for name, n := range taken {
		if n != 1 {
			t.Errorf("%s claimed %d times", name, n)
		}
	}
}

// A deferred delivery is listed with the endpoint's queued deliveries, so the deliveries
// list shows it pending.
func TestQueuedDeliveriesListDeferred(t *testing.T) {
	st := storetest.NewStore(t)
	acct := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	id, resend := uuid.New(), uuid.New()
	for _, d := range []store.DeferredDelivery{
		{DeliveryName: "whdl-1", EventID: id, OutboxID: id, EventCreatedAt: at},
		{DeliveryName: "whdl-2", EventID: id, OutboxID: resend, ResendOf: "whdl-0", Salt: "resend-" + resend.String(), EventCreatedAt: at.Add(time.Second)},
	} {
		d.AccountID, d.EndpointPublicID, d.EventType, d.DeferredAt = acct.Account.ID, "whep-a", "call.ended", at
		if err := st.DeferDelivery(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.QueuedDeliveriesFor(context.Background(), acct.Account.ID, store.QueuedFilter{EndpointPublicID: "whep-a", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.QueuedDelivery{
		{OutboxID: resend, EventID: id, Type: "call.ended", Resend: true, CreatedAt: at.Add(time.Second)},
		{OutboxID: id, EventID: id, Type: "call.ended", CreatedAt: at},
	}
	if len(got) != 2 || got[0].OutboxID != want[0].OutboxID || !got[0].Resend || got[1].OutboxID != want[1].OutboxID || got[1].Resend ||
		!got[1].CreatedAt.Equal(at) || got[0].EventID != id {
		t.Fatalf("queued = %+v, want %+v", got, want)
	}
	other, err := st.QueuedDeliveriesFor(context.Background(), acct.Account.ID, store.QueuedFilter{EndpointPublicID: "whep-b", Limit: 10})
	if err != nil || len(other) != 0 {
		t.Fatalf("another endpoint lists %v, %v", other, err)
	}
}
