package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibBlock(t *testing.T, st *store.Store, in store.NewBlockedCaller) string {
	t.Helper()
	pid, err := st.CreateBlockedCaller(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestBlockedCallersList(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	num := ibNumber(t, h.store, acct, "+442079460001", "Main")
	const path = "/v1/blocked-callers"

	// None yet: an empty array, not null.
	resp := h.api.Do(t, tenant.OwnerKey, "GET", path, nil)
	if data, ok := resp.Map(t)["data"].([]any); !ok || len(data) != 0 {
		t.Fatalf("no blocked callers: %s", resp)
	}

	everywhere := ibBlock(t, h.store, store.NewBlockedCaller{AccountID: acct, E164: "+447700900666", Action: "reject",
		Label: "Spam", CreatedAt: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)})
	// 02:00 UTC on 10 March: 10 March in London, 9 March in New York.
	onMain := ibBlock(t, h.store, store.NewBlockedCaller{AccountID: acct, E164: "+447700900777", Action: "voicemail",
		NumberID: &num.ID, CreatedAt: time.Date(2025, 3, 10, 2, 0, 0, 0, time.UTC)})
	middle := ibBlock(t, h.store, store.NewBlockedCaller{AccountID: acct, E164: "+447700900888", Action: "reject",
		Label: "Ex-customer", CreatedAt: time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC)})
	foreign := ibBlock(t, h.store, store.NewBlockedCaller{AccountID: other.Account.ID, E164: "+447700900666", Action: "reject", CreatedAt: ibNow})

	var list struct {
		Data []map[string]any `json:"data"`
	}
	get := func(key string, query ...string) []map[string]any {
		t.Helper()
		resp := h.api.Do(t, key, "GET", path+strings.Join(query, ""), nil)
		if resp.Status != 200 {
			t.Fatalf("GET %s: %s", path, resp)
		}
		m := resp.Map(t)
		if len(m) != 1 {
			t.Errorf("list has fields other than data: %s", resp.Body)
		}
		list.Data = nil
		resp.JSON(t, &list)
		return list.Data
	}
	ids := func(rows []map[string]any) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, r["public_id"].(string))
		}
		return out
	}

	rows := get(tenant.OwnerKey)
	ibWantIDs(t, "blocked callers, newest first", ids(rows), onMain, middle, everywhere)
	ibWantFields(t, "block on a number", rows[0], map[string]any{
		"public_id": onMain, "e164": "+447700900777", "action": "voicemail", "label": "",
		"number": map[string]any{"public_id": num.PublicID, "e164": "+442079460001", "label": "Main"}, "created_at": "2025-03-10",
	})
	ibWantFields(t, "block everywhere", rows[2], map[string]any{
		"public_id": everywhere, "e164": "+447700900666", "action": "reject", "label": "Spam", "number": nil, "created_at": "2025-03-01",
	})

	// created_at is the day in the account's time zone.
	tz := "America/New_York"
	if _, err := h.store.UpdateAccount(context.Background(), acct, store.AccountSettings{TimeZone: &tz}); err != nil {
		t.Fatal(err)
	}
	if rows := get(tenant.OwnerKey); rows[0]["created_at"] != "2025-03-09" {
		t.Errorf("created_at in New York = %v, want 2025-03-09", rows[0]["created_at"])
	}

	// Not paged: paging parameters change nothing.
	ibWantIDs(t, "with page=2", ids(get(tenant.OwnerKey, "?page=2&per_page=1")), onMain, middle, everywhere)

	ibWantIDs(t, "other account", ids(get(other.OwnerKey)), foreign)
	ibWantIDs(t, "read-only key", ids(get(apitest.NewKey(t, h.store, tenant.Owner.ID))), onMain, middle, everywhere)
	team := apitest.NewTenant(t, h.store, plans.Team)
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", path, nil)
}
