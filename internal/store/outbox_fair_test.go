package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// A claim shares its limit between the accounts with events waiting, oldest first within
// each: a flood queued earlier by one account does not hold back another's events.
func TestClaimFairlySharesBetweenAccounts(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	flood := apitest.NewTenant(t, st, plans.Business)
	steady := apitest.NewTenant(t, st, plans.Business)
	quiet := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	floodIDs := enqueueEventsSecondsApart(t, st, flood.Account.ID, at, 100)
	steadyIDs := enqueueEventsSecondsApart(t, st, steady.Account.ID, at.Add(time.Hour), 5)
	quietIDs := enqueueEventsSecondsApart(t, st, quiet.Account.ID, at.Add(2*time.Hour), 3)
	now := at.Add(3 * time.Hour)

	claim := func(c store.FairClaim) (store.ClaimedEvents, map[int64][]uuid.UUID) {
		t.Helper()
		got, err := st.ClaimFairly(ctx, c, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		by := map[int64][]uuid.UUID{}
		for _, e := range got.Events {
			by[e.AccountID] = append(by[e.AccountID], e.ID)
		}
		return got, by
	}

	// Three accounts, twelve places: four each, and the quiet account's three.
	got, by := claim(store.FairClaim{Limit: 12})
	if !slices.Equal(by[flood.Account.ID], floodIDs[:4]) || !slices.Equal(by[steady.Account.ID], steadyIDs[:4]) ||
		!slices.Equal(by[quiet.Account.ID], quietIDs) {
		t.Fatalf("claim of 12 took flood %d, steady %d, quiet %d events (want the 4, 4 and 3 oldest of each)",
			len(by[flood.Account.ID]), len(by[steady.Account.ID]), len(by[quiet.Account.ID]))
	}
	if !got.More || got.Next != 0 {
		t.Errorf("More = %v, Next = %d; want More (two accounts had more than their share) and Next 0", got.More, got.Next)
	}
	// Oldest first overall, as the dispatcher fans out.
	if !slices.IsSortedFunc(got.Events, func(a, b store.PendingEvent) int { return a.CreatedAt.Compare(b.CreatedAt) }) {
		t.Error("claimed events are not oldest first")
	}

	// The flooding account held back (its allowance spent): the others' events only.
	_, by = claim(store.FairClaim{Limit: 50, Allowance: map[int64]int{flood.Account.ID: 0}})
	if len(by[flood.Account.ID]) != 0 || !slices.Equal(by[steady.Account.ID], steadyIDs[4:]) {
		t.Fatalf("with the flood held back: flood %d, steady %v; want none and the steady account's last", len(by[flood.Account.ID]), by[steady.Account.ID])
	}
	// An allowance bounds an account's events; with nobody else waiting it takes the rest of
	// the limit otherwise.
	_, by = claim(store.FairClaim{Limit: 50, Allowance: map[int64]int{flood.Account.ID: 7}})
	if !slices.Equal(by[flood.Account.ID], floodIDs[4:11]) {
		t.Fatalf("flood with an allowance of 7 took %d events, want its next 7 oldest", len(by[flood.Account.ID]))
	}
	// An account not named in Allowance takes up to PerAccount.
	_, by = claim(store.FairClaim{Limit: 50, PerAccount: 5})
	if !slices.Equal(by[flood.Account.ID], floodIDs[11:16]) {
		t.Fatalf("flood with PerAccount 5 took %d events, want its next 5 oldest", len(by[flood.Account.ID]))
	}
	// Once the others' events are dispatched, the flooding account alone takes the limit.
	if err := st.MarkEventsDispatched(ctx, append(slices.Clone(steadyIDs), quietIDs...), now); err != nil {
		t.Fatal(err)
	}
	_, by = claim(store.FairClaim{Limit: 50})
	if !slices.Equal(by[flood.Account.ID], floodIDs[16:66]) {
		t.Fatalf("flood alone took %d events, want the next 50", len(by[flood.Account.ID]))
	}
}

// With fewer places than accounts, each account's oldest event comes before any account's
// second, and the oldest of those win; a claim that looks at fewer accounts than are waiting
// says where the next one resumes, so successive claims go round them all.
func TestClaimFairlyGoesRoundTheAccounts(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	var tenants []apitest.Tenant
	var first []uuid.UUID
	for i := range 3 {
		tn := apitest.NewTenant(t, st, plans.Business)
		tenants = append(tenants, tn)
		ids := enqueueEventsSecondsApart(t, st, tn.Account.ID, at.Add(time.Duration(2-i)*time.Minute), 10)
		first = append(first, ids[0])
	}
	now := at.Add(time.Hour)
	got, err := st.ClaimFairly(ctx, store.FairClaim{Limit: 2}, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(got.Events))
	for i, e := range got.Events {
		ids[i] = e.ID
	}
	// The third account's head is the oldest, then the second's.
	if !slices.Equal(ids, []uuid.UUID{first[2], first[1]}) {
		t.Fatalf("claim of 2 among 3 accounts = %v, want the two oldest heads %v", ids, []uuid.UUID{first[2], first[1]})
	}

	// Looking at two accounts at a time: the first two, then the third, then round again.
	seen := []int64{}
	after := int64(0)
	for range 3 {
		got, err := st.ClaimFairly(ctx, store.FairClaim{Limit: 1, Accounts: 2, After: after}, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != 1 {
			t.Fatalf("claimed %d events, want 1", len(got.Events))
		}
		seen = append(seen, got.Events[0].AccountID)
		after = got.Next
	}
	b, c := tenants[1].Account.ID, tenants[2].Account.ID
	// The first two accounts looked at (the second's head is older), then the third alone,
	// then the first two again (the second's next event is still older than the first's head).
	if want := []int64{b, c, b}; !slices.Equal(seen, want) {
		t.Fatalf("accounts claimed in turn = %v, want %v", seen, want)
	}
}

// A claim reads the outbox from an hour before the oldest undispatched event it last found
// (checked every 30 s), so a month of partitions is not read at each claim: an event queued
// weeks ago is still claimed, and one queued later with a created_at older than that floor
// waits for the next check.
func TestClaimLooksBackToTheOldestUndispatched(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	now := time.Now().UTC().Truncate(time.Second)
	claimed := func(at time.Time) []uuid.UUID {
		t.Helper()
		got, err := st.ClaimFairly(ctx, store.FairClaim{Limit: 10}, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for _, e := range got.Events {
			ids = append(ids, e.ID)
			if err := st.MarkEventDispatched(ctx, e.OutboxID, at); err != nil {
				t.Fatal(err)
			}
		}
		return ids
	}

	weeksAgo := enqueueEventsSecondsApart(t, st, tenant.Account.ID, now.Add(-20*24*time.Hour), 1)
	if got := claimed(now); !slices.Equal(got, weeksAgo) {
		t.Fatalf("claimed %v, want the event queued 20 days ago %v", got, weeksAgo)
	}
	// Checked again with nothing waiting: the floor is an hour before then until the next check.
	checked := now.Add(31 * time.Second)
	if got := claimed(checked); len(got) != 0 {
		t.Fatalf("claimed %v from an empty outbox", got)
	}
	recent := enqueueEventsSecondsApart(t, st, tenant.Account.ID, checked.Add(-30*time.Minute), 1)
	late := enqueueEventsSecondsApart(t, st, tenant.Account.ID, checked.Add(-2*time.Hour), 1)
	if got := claimed(checked.Add(10 * time.Second)); !slices.Equal(got, recent) {
		t.Errorf("before the next check claimed %v, want only the event within the hour %v", got, recent)
	}
	if got := claimed(checked.Add(31 * time.Second)); !slices.Equal(got, late) {
		t.Errorf("after the next check claimed %v, want the older event %v", got, late)
	}
}
