package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// The key's state changes in the work's own transaction (Tx.CommitIdempotencyClaim): a rolled-back transaction leaves
// the key running (a repeat after the lease does the work), a committed one marks it
// committed (a repeat never does the work again), and a request whose claim was taken over
// has its transaction rolled back.
func TestIdempotencyKeyFollowsTheWorkTransaction(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Keys Ltd", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC)
	lease, keep := time.Minute, 24*time.Hour
	req := store.IdempotencyRequest{AccountID: acct.ID, Key: "k1", Route: "POST /v1/x", BodySHA256: []byte{1}}
	state := func() string {
		t.Helper()
		var s string
		if err := st.SQL().QueryRow(ctx, `SELECT state FROM idempotency_keys WHERE account_id = $1 AND key = $2`, acct.ID, req.Key).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	claim := func(at time.Time) store.ClaimResult {
		t.Helper()
		res, err := st.ClaimIdempotencyKey(ctx, req, at, lease, keep)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	work := func(c *store.IdempotencyClaim, fail bool) error {
		return st.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.CommitIdempotencyClaim(ctx, c); err != nil {
				return err
			}
			if _, err := tx.ApplyLedgerEntry(ctx, acct.ID, store.LedgerAdjustment, 1, "work", "", now); err != nil {
				return err
			}
			if fail {
				return errors.New("work failed")
			}
			return nil
		})
	}
	balance := func() int64 {
		var n int64
		if err := st.SQL().QueryRow(ctx, `SELECT balance_pence FROM accounts WHERE id = $1`, acct.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	first := claim(now)
	if first.Outcome != store.ClaimGranted {
		t.Fatalf("first claim %v", first.Outcome)
	}
	if err := work(first.Claim, true); err == nil || state() != "running" {
		t.Fatalf("rolled-back work left state %s", state())
	}
	// Past the lease a repeat takes the key over; the first request's later work is refused.
	second := claim(now.Add(lease))
	if second.Outcome != store.ClaimGranted {
		t.Fatalf("takeover %v", second.Outcome)
	}
	if err := work(first.Claim, false); !errors.Is(err, store.ErrIdempotencyClaimLost) || !first.Claim.Lost() || balance() != 0 {
		t.Fatalf("work of a lost claim: %v, balance %d", err, balance())
	}
	if err := work(second.Claim, false); err != nil || state() != "committed" || balance() != 1 || !second.Claim.Committed() {
		t.Fatalf("committed work: %v, state %s, balance %d", err, state(), balance())
	}
	// Committed without an answer: never done again, even past the lease.
	if res := claim(now.Add(time.Hour)); res.Outcome != store.ClaimUnanswered {
		t.Errorf("after committed work %v", res.Outcome)
	}
	if err := st.ReleaseIdempotencyKey(ctx, second.Claim); err != nil || state() != "committed" {
		t.Errorf("release of committed work: %v, state %s", err, state())
	}
	// Expired keys are swept by any later claim.
	other := req
	other.Key = "k2"
	if _, err := st.ClaimIdempotencyKey(ctx, other, now.Add(keep+time.Hour), lease, keep); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = 'k1'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("expired key not swept: %d %v", n, err)
	}
}
