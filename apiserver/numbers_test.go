package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestNumbersAndRouting(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Team) // numbers need no add-on
	other := apitest.NewTenant(t, h.store, plans.Business)

	second, err := h.store.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID, E164: "+442079460002", Label: "Sales"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.store.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID, E164: "+442079460001", Label: "Main",
		BusinessProfile: "Hartley Plumbing", CLIVerified: true, PrivacyModeEnabled: true,
		Routes: []store.NumberRoute{
			{Kind: "default", Settings: store.RouteSettings{Mode: "forward", RecordingEnabled: true,
				ForwardTargets: []store.ForwardTarget{{Kind: "pstn", E164: "+447700900001", StaffLabel: "Jo", RingSeconds: 20}}}},
			{Kind: "schedule", Name: "Evenings", Windows: []store.Window{{Days: []int{1, 2, 3, 4, 5}, Start: "18:00", End: "23:00"}},
				Settings: store.RouteSettings{Mode: "voicemail"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := h.store.CreateNumber(ctx, store.NewNumber{AccountID: other.Account.ID, E164: "+442079460099"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.SQL(t, h.store).Exec(ctx, `INSERT INTO numbers (account_id, public_id, e164, status) VALUES ($1, 'num_released', '+442079460000', 'released')`, tenant.Account.ID); err != nil {
		t.Fatal(err)
	}

	var list apiserver.NumberList
	h.api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers", nil).JSON(t, &list)
	if len(list.Data) != 2 || list.Data[0].PublicID != first.PublicID || list.Data[1].PublicID != second.PublicID {
		t.Fatalf("numbers = %+v, want the two live numbers ordered by number", list.Data)
	}

	got := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+first.PublicID, nil).Map(t)
	if got["e164"] != "+442079460001" || got["ownership"] != "rented" || got["cli_verified"] != true {
		t.Errorf("number = %v", got)
	}
	if bp := got["business_profile"].(map[string]any); bp["name"] != "Hartley Plumbing" {
		t.Errorf("business_profile = %v", bp)
	}

	routing := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+first.PublicID+"/routing", nil).Map(t)
	if n := routing["number"].(map[string]any); n["privacy_mode_enabled"] != true {
		t.Errorf("routing number = %v", n)
	}
	def := routing["default"].(map[string]any)
	targets := def["forward_targets"].([]any)
	if def["mode"] != "forward" || len(targets) != 1 || targets[0].(map[string]any)["ring_seconds"] != float64(20) {
		t.Errorf("default route = %v", def)
	}
	schedules := routing["schedules"].([]any)
	if len(schedules) != 1 || schedules[0].(map[string]any)["name"] != "Evenings" {
		t.Errorf("schedules = %v", schedules)
	}
	if routing["override"] != nil {
		t.Errorf("override = %v, want null", routing["override"])
	}

	// Another account's number, and an unknown one, are simply not there.
	for _, path := range []string{"/v1/numbers/" + foreign.PublicID, "/v1/numbers/" + foreign.PublicID + "/routing", "/v1/numbers/num_unknown"} {
		if resp := h.api.Do(t, tenant.OwnerKey, "GET", path, nil); resp.Status != 404 {
			t.Errorf("GET %s: %s, want 404", path, resp)
		}
	}
}

// An id PostgreSQL text cannot hold (a NUL byte, invalid UTF-8) names no number: 404, not 500.
func TestNumbersUnstorableIDIsNotFound(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Team)
	for _, id := range []string{"%00", "num%00x", "%FF"} {
		for _, path := range []string{"/v1/numbers/" + id, "/v1/numbers/" + id + "/routing"} {
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", path, nil); resp.Status != 404 {
				t.Errorf("GET %s: %s, want 404", path, resp)
			}
		}
	}
}

// The routing shows an override only while it is set: one whose end has passed is null.
func TestNumberRoutingOverrideOnlyWhileSet(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Team)
	override := func(e164 string, until *time.Time) string {
		n, err := h.store.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID, E164: e164, Routes: []store.NumberRoute{
			{Kind: "default", Settings: store.RouteSettings{Mode: "forward"}},
			{Kind: "override", Settings: store.RouteSettings{Mode: "voicemail"}, Until: until},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return n.PublicID
	}
	past, future := time.Now().Add(-time.Hour).UTC().Truncate(time.Second), time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	cases := []struct {
		number    string
		wantUntil any // nil: no override shown
		shown     bool
	}{
		{override("+442079460011", &past), nil, false},
		{override("+442079460012", &future), future.Format(time.RFC3339), true},
		{override("+442079460013", nil), nil, true}, // no end: set until removed
	}
	for _, c := range cases {
		routing := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+c.number+"/routing", nil).Map(t)
		ov, _ := routing["override"].(map[string]any)
		if (ov != nil) != c.shown {
			t.Errorf("%s: override = %v, want shown %v", c.number, routing["override"], c.shown)
			continue
		}
		if ov != nil && (ov["mode"] != "voicemail" || ov["until"] != c.wantUntil) {
			t.Errorf("%s: override = %v, want voicemail until %v", c.number, ov, c.wantUntil)
		}
	}
}
