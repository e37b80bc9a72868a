package apiserver_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// Every webhook route, given an id that cannot name a Kubernetes object ('%', '.', "..",
// upper case, too long, ...), answers 404 with a message: never a 500.
func (h *webhookHarness) testIdsThatCannotBeNames(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	endpoint := h.create(t, tenant.OwnerKey, "https://hooks.example.com/ids")["public_id"].(string)
	const event = "0b4e7a0e-5e9d-4f6b-9a47-2a3c1d0e9f10"
	badEndpoints := []string{"%25", "%2E", "%2E%2E", "a%25b", "Whep-ABC", "whep_x", "-whep", "whep.", "a%20b",
		url.PathEscape(strings.Repeat("a", 254)), "%E2%82%AC", "whep%3Ax"}
	badEvents := []string{"%25", "%2E", "%2E%2E", "not-a-uuid", event + "0", "{" + event + "}", "urn:uuid:" + event}
	checked := 0
	for _, r := range apiserver.RouteRules(apiserver.New(apiserver.Config{Clock: clock.RealClock{}, Log: logr.Discard(), Kube: h.kube}, h.st,
		apiserver.Webhooks(apiserver.WebhooksConfig{}))) {
		if !strings.HasPrefix(r.Path, "/v1/webhooks/{") {
			continue
		}
		var paths []string
		for _, bad := range badEndpoints {
			paths = append(paths, strings.NewReplacer("{endpoint}", bad, "{eventId}", event).Replace(r.Path))
		}
		if strings.Contains(r.Path, "{eventId}") {
			for _, bad := range badEvents {
				paths = append(paths, strings.NewReplacer("{endpoint}", endpoint, "{eventId}", bad).Replace(r.Path))
			}
		}
		for _, path := range paths {
			h.clk.Step(time.Minute) // stay inside the per-minute limits
			resp := h.api.Do(t, tenant.OwnerKey, r.Method, path, map[string]any{"name": "x"})
			if resp.Status != 404 || resp.Map(t)["message"] == "" {
				t.Errorf("%s %s: got %s, want 404 with a message", r.Method, path, resp)
			}
		}
		checked++
	}
	if checked < 6 {
		t.Fatalf("only %d webhook routes with path ids found", checked)
	}
}
