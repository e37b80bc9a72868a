package apiserver_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// testIdempotentCreate: a repeated create with one Idempotency-Key makes one endpoint in
// kube-apiserver and replays the first answer, secret included.
func (h *webhookHarness) testIdempotentCreate(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	body := map[string]any{"name": "CRM", "url": "https://hooks.example.com/once", "events": []string{"call.ended"}}
	first := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/webhooks", body, withKey("hook-1"))
	again := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/webhooks", body, withKey("hook-1"))
	if first.Status != http.StatusCreated || again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" ||
		!bytes.Equal(first.Body, again.Body) {
		t.Fatalf("create %s, repeat %s %v", first, again, again.Header)
	}
	var eps switchboardv1alpha1.WebhookEndpointList
	if err := h.kube.List(context.Background(), &eps, client.InNamespace(tenancy.Namespace(tenant.Account.PublicID))); err != nil {
		t.Fatal(err)
	}
	if len(eps.Items) != 1 {
		t.Errorf("%d endpoints after a repeated create, want 1", len(eps.Items))
	}
}
