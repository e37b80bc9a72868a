package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Reveals are recorded for owners only, listed newest first per endpoint, and pruning drops
// the records made before its cutoff.
func TestSecretReveals(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	a := apitest.NewTenant(t, st, plans.Business)
	member, err := st.CreateUser(ctx, store.NewUser{AccountID: a.Account.ID, Name: "Max Member", Email: fmt.Sprintf("max-%d@example.com", a.Account.ID), Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	if err := st.RecordSecretReveal(ctx, member, "whep-a", t0); !errors.Is(err, store.ErrNotAllowed) {
		t.Errorf("a member's reveal: %v, want ErrNotAllowed", err)
	}
	for _, at := range []time.Time{t0.Add(-100 * 24 * time.Hour), t0.Add(-24 * time.Hour), t0} {
		if err := st.RecordSecretReveal(ctx, a.Owner, "whep-a", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordSecretReveal(ctx, a.Owner, "whep-b", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneSecretReveals(ctx, t0.Add(-store.SecretRevealsKept)); err != nil || n != 1 {
		t.Errorf("pruning 90 days back deleted %d (%v); want the 100-day-old record", n, err)
	}
	got, err := st.SecretReveals(ctx, a.Account.ID, "whep-a", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SecretReveal{{UserName: a.Owner.Name, UserEmail: a.Owner.Email, At: t0}, {UserName: a.Owner.Name, UserEmail: a.Owner.Email, At: t0.Add(-24 * time.Hour)}}
	if len(got) != len(want) {
		t.Fatalf("reveals of whep-a: %+v; want %+v (the 100-day-old one dropped)", got, want)
	}
	for i := range want {
		if got[i].UserName != want[i].UserName || got[i].UserEmail != want[i].UserEmail || !got[i].At.Equal(want[i].At) {
			t.Errorf("reveal %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if one, err := st.SecretReveals(ctx, a.Account.ID, "whep-a", 1); err != nil || len(one) != 1 || !one[0].At.Equal(t0) {
		t.Errorf("the newest reveal: %+v, %v", one, err)
	}
}
