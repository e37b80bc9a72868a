package apiserver_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// routeRules sweeps the route table; the access checks run before any handler, so ids that
// do not exist are fine.
func routeRules(t *testing.T, h *harness) []apiserver.RouteRule {
	t.Helper()
	rules := apiserver.RouteRules(apiserver.New(apiserver.Config{Clock: clock.RealClock{}, Log: logr.Discard()}, h.store))
	if len(rules) < 20 {
		t.Fatalf("only %d routes found", len(rules))
	}
	for i := range rules {
		rules[i].Path = pathParam.ReplaceAllString(rules[i].Path, "zz_missing")
	}
	return rules
}

// Every route outside the anonymous ones declares an access rule.
func TestEveryRouteDeclaresAccess(t *testing.T) {
	h := newHarness(t)
	for _, r := range routeRules(t, h) {
		anonymous := strings.TrimSuffix(r.Path, "/") == "/v1/openapi.json" || strings.HasPrefix(r.Path, "/v1/media/") || strings.HasPrefix(r.Path, "/v1/shared/")
		if !r.Protected && !anonymous {
			t.Errorf("%s %s has no access rule", r.Method, r.Path)
		}
	}
}

// A key without a route's permission gets 403 {message} naming it; a key holding a permission
// that includes it (contacts:write ⊇ contacts:read, auto-transcribe ⊇ transcribe) passes.
func TestEachPermissionIsRequired(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	includers := map[auth.Ability][]auth.Ability{auth.ContactsRead: {auth.ContactsWrite}, auth.Transcribe: {auth.AutoTranscribe}}
	seen := map[auth.Ability]bool{}
	for _, r := range routeRules(t, h) {
		p := r.Access.Permission
		if !r.Protected || p == "" || p == auth.Read {
			continue
		}
		seen[p] = true
		var without []string
		for _, a := range auth.AllAbilities {
			if a != p && !slices.Contains(includers[p], a) {
				without = append(without, string(a))
			}
		}
		key := apitest.NewKey(t, h.store, tenant.Owner.ID, without...)
		resp := h.api.Do(t, key, r.Method, r.Path, map[string]any{})
		if resp.Status != 403 || !strings.Contains(resp.Map(t)["message"].(string), string(p)) {
			t.Errorf("%s %s without %s: got %s, want 403 naming the permission", r.Method, r.Path, p, resp)
		}
		for _, inc := range includers[p] {
			resp := h.api.Do(t, apitest.NewKey(t, h.store, tenant.Owner.ID, string(inc)), r.Method, r.Path, map[string]any{})
			if resp.Status == 403 {
				t.Errorf("%s %s with %s (which includes %s): got %s", r.Method, r.Path, inc, p, resp)
			}
		}
	}
	for _, p := range []auth.Ability{auth.ContactsRead, auth.ContactsWrite, auth.InboxWrite} {
		if !seen[p] {
			t.Errorf("no route requires %s", p)
		}
	}
}

// Owner-only routes refuse a member's key even when it holds the permission (here a key made
// while its user was an owner, who has since become a member).
func TestOwnerOnlyRoutesRefuseMembers(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	demoted := tenant.NewMember(t, h.store, true, true)
	if _, err := storetest.SQL(t, h.store).Exec(context.Background(), `UPDATE users SET role = 'owner' WHERE id = $1`, demoted.ID); err != nil {
		t.Fatal(err)
	}
	key := apitest.NewKey(t, h.store, demoted.ID, auth.Abilities(auth.AllAbilities).Strings()...)
	if _, err := storetest.SQL(t, h.store).Exec(context.Background(), `UPDATE users SET role = 'member' WHERE id = $1`, demoted.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range routeRules(t, h) {
		if !r.Access.OwnerOnly {
			continue
		}
		resp := h.api.Do(t, key, r.Method, r.Path, map[string]any{})
		if resp.Status != 403 || !strings.Contains(resp.Map(t)["message"].(string), "owner") {
			t.Errorf("%s %s with a member's key: got %s, want 403", r.Method, r.Path, resp)
		}
	}
}

// Each of the four refusal reasons of the Integrations gate is reachable, with the spec's body.
func TestIntegrationsGateReasons(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	set := func(t *testing.T, acct store.Account, s store.AccountSettings) {
		t.Helper()
		if _, err := h.store.UpdateAccount(ctx, acct.ID, s); err != nil {
			t.Fatal(err)
		}
	}
	paused, yes := "paused", true
	cases := []struct {
		name   string
		plan   string
		addons []string
		change *store.AccountSettings
		reason string
	}{
		{"team without the add-on", plans.Team, nil, nil, plans.ReasonAddonRequired},
		{"starter cannot add it", plans.Starter, nil, nil, plans.ReasonPlanRequired},
		{"paused account", plans.Business, nil, &store.AccountSettings{Status: &paused}, plans.ReasonAccountInactive},
		{"switched off by the platform", plans.Team, []string{plans.AddonIntegrations}, &store.AccountSettings{IntegrationsDisabled: &yes}, plans.ReasonPlatformDisabled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tenant := apitest.NewTenant(t, h.store, c.plan, c.addons...)
			if c.change != nil {
				set(t, tenant.Account, *c.change)
			}
			resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/calls", nil)
			body := resp.Map(t)
			if resp.Status != 403 || body["reason"] != c.reason || body["capability"] != "integrations" ||
				body["pricing_url"] != plans.PricingURL || body["message"] == "" {
				t.Fatalf("got %s, want 403 reason %s", resp, c.reason)
			}
			// Routes outside the gate keep working.
			if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/me", nil); resp.Status != 200 {
				t.Errorf("/me on a refused account: %s", resp)
			}
		})
	}

	// Every gated route refuses with the same body; a team account with the add-on passes.
	refused := apitest.NewTenant(t, h.store, plans.Team)
	allowed := apitest.NewTenant(t, h.store, plans.Team, plans.AddonIntegrations)
	for _, r := range routeRules(t, h) {
		if !r.Access.NeedsIntegrations {
			continue
		}
		if resp := h.api.Do(t, refused.OwnerKey, r.Method, r.Path, map[string]any{}); resp.Status != 403 || resp.Map(t)["reason"] != plans.ReasonAddonRequired {
			t.Errorf("%s %s without Integrations: got %s", r.Method, r.Path, resp)
		}
		if resp := h.api.Do(t, allowed.OwnerKey, r.Method, r.Path, map[string]any{}); resp.Status == 403 {
			t.Errorf("%s %s with the add-on: got %s", r.Method, r.Path, resp)
		}
	}
}

// The spec's Summary table, row by row, and the additions beyond it: every operation exists
// with its permission, role and add-on rule, and there is no other protected operation.
func TestSummaryTableOfEndpoints(t *testing.T) {
	const owner, addon = true, true
	table := []struct {
		method, path string
		perm         auth.Ability
		ownerOnly    bool
		integrations bool
	}{
		{"GET", "/v1/me", auth.Read, false, false},
		{"GET", "/v1/balance", auth.Read, false, false},
		{"GET", "/v1/numbers", auth.Read, false, false},
		{"GET", "/v1/numbers/{number}", auth.Read, false, false},
		{"GET", "/v1/numbers/{number}/routing", auth.Read, false, false},
		{"GET", "/v1/calls", auth.Read, false, addon},
		{"GET", "/v1/calls/{call}", auth.Read, false, addon},
		{"POST", "/v1/calls/{call}/transcribe", auth.Transcribe, false, addon},
		{"GET", "/v1/recordings/{recording}/stream-url", auth.Read, false, addon},
		{"GET", "/v1/recordings/{recording}/transcript", auth.Read, false, addon},
		{"GET", "/v1/recordings/{recording}/transcript/estimate", auth.Read, false, addon},
		{"GET", "/v1/sms/conversations", auth.Read, false, addon},
		{"GET", "/v1/sms/conversations/{conversation}/messages", auth.Read, false, addon},
		{"GET", "/v1/contacts", auth.ContactsRead, false, addon},
		{"POST", "/v1/contacts", auth.ContactsWrite, false, addon},
		{"POST", "/v1/contacts/bulk-upsert", auth.ContactsWrite, false, addon},
		{"PUT", "/v1/contacts/{contact}", auth.ContactsWrite, false, addon},
		{"DELETE", "/v1/contacts/{contact}", auth.ContactsWrite, false, addon},
		{"GET", "/v1/tasks", auth.Read, false, addon},
		{"PATCH", "/v1/tasks/{task}", auth.InboxWrite, false, addon},
		{"GET", "/v1/notifications", auth.Read, false, addon},
		{"POST", "/v1/notifications/{notification}/read", auth.InboxWrite, false, addon},
		{"POST", "/v1/notifications/read-all", auth.InboxWrite, false, addon},
		{"GET", "/v1/reception-messages", auth.Read, false, addon},
		{"GET", "/v1/job-requests", auth.Read, false, addon},
		{"GET", "/v1/blocked-callers", auth.Read, false, addon},
		{"GET", "/v1/analytics", auth.Read, false, false},
		{"GET", "/v1/billing/ledger", auth.Read, false, false},
		{"GET", "/v1/billing/receipts", auth.Read, false, false},
		{"GET", "/v1/webhooks", auth.WebhooksManage, owner, false},
		{"POST", "/v1/webhooks", auth.WebhooksManage, owner, addon},
		{"PATCH", "/v1/webhooks/{endpoint}", auth.WebhooksManage, owner, false},
		{"DELETE", "/v1/webhooks/{endpoint}", auth.WebhooksManage, owner, false},
		{"POST", "/v1/webhooks/{endpoint}/rotate", auth.WebhooksManage, owner, false},
		{"POST", "/v1/webhooks/{endpoint}/test", auth.WebhooksManage, owner, addon},
		{"GET", "/v1/webhooks/{endpoint}/deliveries", auth.WebhooksManage, owner, false},
		{"POST", "/v1/webhooks/{endpoint}/deliveries/{eventId}/resend", auth.WebhooksManage, owner, addon},
		// Beyond the spec's table (docs/integrator-tools.md), with resend's rules.
		{"POST", "/v1/webhooks/{endpoint}/recover", auth.WebhooksManage, owner, addon},
	}
	c := apiserver.New(apiserver.Config{Clock: clock.RealClock{}, Log: logr.Discard()}, nil, apiserver.Webhooks(apiserver.WebhooksConfig{}))
	served := map[string]apiserver.Access{}
	for _, r := range apiserver.RouteRules(c) {
		if r.Protected {
			served[r.Method+" "+strings.TrimSuffix(r.Path, "/")] = r.Access
		}
	}
	for _, row := range table {
		key := row.method + " " + row.path
		a, ok := served[key]
		if !ok {
			t.Errorf("%s is not served", key)
			continue
		}
		delete(served, key)
		if a.Permission != row.perm || a.OwnerOnly != row.ownerOnly || a.NeedsIntegrations != row.integrations {
			t.Errorf("%s: permission %s, owner only %v, Integrations %v; the spec says %s, %v, %v",
				key, a.Permission, a.OwnerOnly, a.NeedsIntegrations, row.perm, row.ownerOnly, row.integrations)
		}
	}
	for key := range served {
		t.Errorf("%s is served but not in the spec's Summary table", key)
	}
}
