package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Authenticating a key notes when it was used, at most once a minute per key, so the keys
// page's "last used" is true without a write on every request.
func TestAuthenticateNotesLastUse(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	exec := sqlExecutor(t, st)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Keys Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Olivia", Email: "olivia@keys.example", Role: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.CreateAPIKey(ctx, owner.ID, "ci", auth.Abilities{auth.Read})
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() *time.Time {
		t.Helper()
		keys, err := st.AccountAPIKeys(ctx, acct.ID, 0)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys: %v %v", keys, err)
		}
		return keys[0].LastUsedAt
	}
	if lastUsed() != nil {
		t.Fatal("a new key shows a last use")
	}
	// Many requests at once: all authenticate, and the key's time is written once.
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = st.AuthenticateAndCount(ctx, auth.Digest(key.Token), time.Now().Truncate(time.Minute))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	first := lastUsed()
	if first == nil {
		t.Fatal("authenticating did not note the key's use")
	}
	// Within the minute: not written again.
	if _, _, err := st.AuthenticateAndCount(ctx, auth.Digest(key.Token), time.Now()); err != nil {
		t.Fatal(err)
	}
	if again := lastUsed(); !again.Equal(*first) {
		t.Errorf("a use within the minute wrote last_used_at again: %v then %v", first, again)
	}
	// Past the minute: written.
	exec(`UPDATE api_keys SET last_used_at = last_used_at - interval '61 seconds' WHERE public_id = $1`, key.PublicID)
	if _, _, err := st.AuthenticateAndCount(ctx, auth.Digest(key.Token), time.Now()); err != nil {
		t.Fatal(err)
	}
	if later := lastUsed(); later.Before(*first) {
		t.Errorf("a use past the minute did not note the time: %v", later)
	}
	// A revoked key writes nothing and is refused.
	exec(`UPDATE api_keys SET revoked_at = now(), last_used_at = NULL WHERE public_id = $1`, key.PublicID)
	if _, _, err := st.AuthenticateAndCount(ctx, auth.Digest(key.Token), time.Now()); err == nil {
		t.Fatal("a revoked key authenticated")
	}
	var used *time.Time
	if err := st.SQL().QueryRow(ctx, `SELECT last_used_at FROM api_keys WHERE public_id = $1`, key.PublicID).Scan(&used); err != nil || used != nil {
		t.Errorf("a revoked key's use was noted: %v %v", used, err)
	}
}

// BenchmarkAuthenticateAndCount is one authenticated API request's database work: the key's
// look-up, the rate-limit count and the coalesced last-use note.
func BenchmarkAuthenticateAndCount(b *testing.B) {
	st := storetest.NewStore(b)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Bench Ltd", Plan: plans.Business})
	if err != nil {
		b.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Olivia", Email: "olivia@bench.example", Role: "owner"})
	if err != nil {
		b.Fatal(err)
	}
	key, err := st.CreateAPIKey(ctx, owner.ID, "bench", auth.Abilities{auth.Read})
	if err != nil {
		b.Fatal(err)
	}
	digest := auth.Digest(key.Token)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := st.AuthenticateAndCount(ctx, digest, time.Now().Truncate(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
}
