package apiserver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// With the database gone, the authentication filter and the operations answer 503 {message}
// with Retry-After, never 500.
func TestDatabaseGoneIs503WithRetryAfter(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	h.store.Close()
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/calls"},
		{"GET", "/v1/me"},
		{"POST", "/v1/contacts"},
	} {
		resp := h.api.Do(t, tenant.OwnerKey, c.method, c.path, map[string]any{"display_name": "X", "phones": []any{}})
		if resp.Status != 503 || resp.Header.Get("Retry-After") == "" || resp.Map(t)["message"] == "" {
			t.Errorf("%s %s: %s, Retry-After %q; want 503 with Retry-After and a message", c.method, c.path, resp, resp.Header.Get("Retry-After"))
		}
	}
}

// When PostgreSQL drops every connection (as on a restart), the pool is emptied on the first
// failure: at most one request is answered 503 (with Retry-After), the rest are served on
// fresh connections.
func TestLostConnectionsAreReplaced(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		var warm sync.WaitGroup // several pooled connections
		for i := 0; i < 6; i++ {
			warm.Go(func() { h.api.DoUnchecked(t, tenant.OwnerKey, "GET", "/v1/calls", nil) })
		}
		warm.Wait()
		// The test's own connection, outside the store's pool, ends every pooled one.
		var killed int
		err := storetest.SQL(t, h.store).QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed)
		if err != nil || killed == 0 {
			t.Fatalf("terminate backends: %v, %d killed", err, killed)
		}
		failures := 0
		for i := 0; i < 6; i++ {
			resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/calls", nil)
			switch {
			case resp.Status == 200:
			case resp.Status == 503 && resp.Header.Get("Retry-After") != "":
				failures++
			default:
				t.Fatalf("round %d request %d: %s, want 200 or 503 with Retry-After", round, i, resp)
			}
		}
		t.Logf("round %d: %d pooled connections ended, %d requests answered 503", round, killed, failures)
		if failures > 1 {
			t.Errorf("round %d: %d requests failed after the connections were dropped, want at most 1", round, failures)
		}
	}
}
