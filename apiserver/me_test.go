package apiserver_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func TestMeReportsAccountUserAndAbilities(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	member := tenant.NewMember(t, h.store, true, false)
	key := apitest.NewKey(t, h.store, member.ID, "contacts:write")

	resp := h.api.Do(t, key, "GET", "/v1/me", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /me: %s", resp)
	}
	var me struct {
		Tenant        struct{ Name, Status string }
		User          struct{ Name, Email, Role string }
		Abilities     []string
		CanTranscribe bool `json:"can_transcribe"`
	}
	resp.JSON(t, &me)
	if me.Tenant.Name != tenant.Account.Name || me.Tenant.Status != "active" {
		t.Errorf("tenant = %+v", me.Tenant)
	}
	if me.User.Email != member.Email || me.User.Role != "member" {
		t.Errorf("user = %+v", me.User)
	}
	want := []string{"read", "contacts:read", "contacts:write"}
	if len(me.Abilities) != len(want) {
		t.Fatalf("abilities = %v, want %v", me.Abilities, want)
	}
	for i := range want {
		if me.Abilities[i] != want[i] {
			t.Errorf("abilities = %v, want %v", me.Abilities, want)
		}
	}
	if me.CanTranscribe {
		t.Error("a key without transcribe reports can_transcribe")
	}

	ownerMe := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/me", nil).Map(t)
	if ownerMe["can_transcribe"] != true {
		t.Errorf("owner key with transcribe on business plan: can_transcribe = %v", ownerMe["can_transcribe"])
	}
}

func TestOpenAPIDescription(t *testing.T) {
	h := newHarness(t)
	resp := h.api.DoUnchecked(t, "", "GET", "/v1/openapi.json", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /openapi.json: %s", resp)
	}
	doc := resp.Map(t)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	if v := doc["info"].(map[string]any)["version"]; v != "1.0" {
		t.Errorf("info.version = %v, want 1.0", v)
	}
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/me", "/balance", "/numbers", "/numbers/{number}", "/numbers/{number}/routing"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("the description lacks %s", p)
		}
	}
}
