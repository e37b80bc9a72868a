package apiserver_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestKeysThatAreRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)

	revoked := apitest.NewKey(t, h.store, tenant.Owner.ID, "read")
	revokedResp := h.api.Do(t, revoked, "GET", "/v1/me", nil)
	if revokedResp.Status != 200 {
		t.Fatalf("key before revocation: %s", revokedResp)
	}
	var keyID string
	if err := storetest.SQL(t, h.store).QueryRow(ctx, `SELECT public_id FROM api_keys ORDER BY id DESC LIMIT 1`).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	if err := h.store.RevokeAPIKey(ctx, keyID, time.Now()); err != nil {
		t.Fatal(err)
	}

	leaver := tenant.NewMember(t, h.store, true, false)
	leaverKey := apitest.NewKey(t, h.store, leaver.ID, "read")
	if err := h.store.MarkUserLeft(ctx, leaver.ID, time.Now()); err != nil {
		t.Fatal(err)
	}

	cases := map[string]string{
		"missing":   "",
		"wrong":     "sbk_thisisnotakey",
		"revoked":   revoked,
		"user left": leaverKey,
	}
	for name, key := range cases {
		t.Run(name, func(t *testing.T) {
			resp := h.api.Do(t, key, "GET", "/v1/me", nil)
			if resp.Status != 401 {
				t.Fatalf("got %s, want 401", resp)
			}
			if resp.Map(t)["message"] == "" {
				t.Error("401 without a message")
			}
		})
	}
	// A non-bearer scheme is refused too.
	resp := h.api.DoUnchecked(t, "", "GET", "/v1/me", nil)
	if resp.Status != 401 {
		t.Errorf("no Authorization header: %s", resp)
	}
	// The owner's other key still works.
	if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/me", nil); resp.Status != 200 {
		t.Errorf("owner key: %s", resp)
	}
}

func TestUnknownPathsAreJSON404(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	for _, path := range []string{"/v1/nope", "/v1/numbers/x/y/z", "/v2/me", "/"} {
		resp := h.api.DoUnchecked(t, tenant.OwnerKey, "GET", path, nil)
		if resp.Status != 404 {
			t.Errorf("GET %s: %s, want 404", path, resp)
			continue
		}
		if resp.Header.Get("Content-Type") != "application/json" || resp.Map(t)["message"] == nil {
			t.Errorf("GET %s: not a JSON message: %s", path, resp)
		}
	}
}

func TestRateLimitIsSharedByKeysAndReplicas(t *testing.T) {
	// Two API replicas on one database, and two keys of one user: they share one budget.
	limit := func(c *apiserver.Config) { c.RequestsPerMinute = 10 }
	first := newHarness(t, limit)
	second := newHarnessOn(t, first.store, limit)
	tenant := apitest.NewTenant(t, first.store, plans.Business)
	otherKey := apitest.NewKey(t, first.store, tenant.Owner.ID, "read")
	colleague := tenant.NewMember(t, first.store, true, false)
	colleagueKey := apitest.NewKey(t, first.store, colleague.ID, "read")

	// Spread 10 requests over both replicas and both keys; stay inside one minute window.
	waitForFreshWindow(t, 15*time.Second)
	for i := 0; i < 10; i++ {
		h, key := first, tenant.OwnerKey
		if i%2 == 1 {
			h, key = second, otherKey
		}
		if resp := h.api.Do(t, key, "GET", "/v1/balance", nil); resp.Status != 200 {
			t.Fatalf("request %d: %s", i+1, resp)
		}
	}
	for _, h := range []*harness{first, second} {
		resp := h.api.Do(t, otherKey, "GET", "/v1/balance", nil)
		if resp.Status != 429 {
			t.Fatalf("11th request: %s, want 429", resp)
		}
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 || secs > 60 {
			t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
		}
	}
	// Another user of the same account has a budget of their own.
	if resp := second.api.Do(t, colleagueKey, "GET", "/v1/balance", nil); resp.Status != 200 {
		t.Errorf("another user was limited too: %s", resp)
	}
}

// waitForFreshWindow waits until at least need remains in the current minute, so a burst
// of requests lands in one fixed window.
func waitForFreshWindow(t *testing.T, need time.Duration) {
	now := time.Now()
	if left := now.Truncate(time.Minute).Add(time.Minute).Sub(now); left < need {
		time.Sleep(left + 100*time.Millisecond)
	}
}
