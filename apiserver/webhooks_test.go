package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// names is a resolver for URL checks: public and private names of the tests.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ip, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(ip)}, nil
}

type webhookHarness struct {
	st   *store.Store
	kube client.Client
	api  *apitest.API
	clk  *clocktesting.FakeClock
}

// TestWebhooks runs the webhook operations against a real kube-apiserver (the resources are
// the source of truth) and PostgreSQL. No controllers run here: the envtest suite in
// controllers/ covers delivery.
func TestWebhooks(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: run via make test")
	}
	env := testenv.Start(t)
	kube, st := env.Kube, env.Store
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	srv := httptest.NewUnstartedServer(nil)
	res := names{"hooks.example.com": "93.184.216.34", "other.example.com": "93.184.216.35", "sneaky.example.com": "10.0.0.8"}
	srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: clk, Log: testr.New(t), Kube: kube},
		st, apiserver.Webhooks(apiserver.WebhooksConfig{URLPolicy: send.URLPolicy{Resolver: res}}))
	srv.Start()
	t.Cleanup(srv.Close)
	h := &webhookHarness{st: st, kube: kube, api: apitest.New(srv.URL), clk: clk}

	t.Run("list, add, change, rotate, remove", h.testLifecycle)
	t.Run("validation", h.testValidation)
	t.Run("at most five endpoints", h.testLimit)
	t.Run("kubectl changes show in the API", h.testKubectl)
	t.Run("test event", h.testTestEvent)
	t.Run("deliveries and resend", h.testDeliveries)
	t.Run("recover", h.testRecover)
	t.Run("access", h.testAccess)
	t.Run("rate limits", h.testRateLimits)
	t.Run("no bad input gives a 500", h.testBadInput)
	t.Run("ids that cannot be Kubernetes names are 404", h.testIdsThatCannotBeNames)
	t.Run("Idempotency-Key on create", h.testIdempotentCreate)
	t.Run("Idempotency-Key claims commit with the work", h.testClaimsCommitted)
}

func (h *webhookHarness) create(t *testing.T, key, url string) map[string]any {
	t.Helper()
	resp := h.api.Do(t, key, "POST", "/v1/webhooks", map[string]any{"name": "CRM", "url": url, "events": []string{"call.ended"}})
	if resp.Status != 201 {
		t.Fatalf("create: %s", resp)
	}
	return resp.Map(t)["endpoint"].(map[string]any)
}

func (h *webhookHarness) endpoint(t *testing.T, tenant apitest.Tenant, id string) *switchboardv1alpha1.WebhookEndpoint {
	t.Helper()
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	if err := h.kube.Get(context.Background(), types.NamespacedName{Namespace: tenancy.Namespace(tenant.Account.PublicID), Name: id}, ep); err != nil {
		t.Fatal(err)
	}
	return ep
}

func (h *webhookHarness) testLifecycle(t *testing.T) {
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	key := tenant.OwnerKey

	resp := h.api.Do(t, key, "GET", "/v1/webhooks", nil)
	if resp.Status != 200 || fmt.Sprint(resp.Map(t)) != "map[can_add:true endpoints:[] events:[call.ended voicemail.received transcript.ready] max:5]" {
		t.Fatalf("empty list: %s", resp)
	}

	resp = h.api.Do(t, key, "POST", "/v1/webhooks", map[string]any{"name": " CRM ", "url": "https://hooks.example.com/sb",
		"events": []string{"call.ended", "transcript.ready", "call.ended"}})
	if resp.Status != 201 {
		t.Fatalf("create: %s", resp)
	}
	var created struct {
		Endpoint map[string]any `json:"endpoint"`
		Secret   string         `json:"secret"`
	}
	resp.JSON(t, &created)
	id, _ := created.Endpoint["public_id"].(string)
	want := map[string]any{"public_id": id, "name": "CRM", "url": "https://hooks.example.com/sb",
		"events": []any{"call.ended", "transcript.ready"}, "status": "active", "failing_since": nil, "rate_limit": nil}
	if fmt.Sprint(created.Endpoint) != fmt.Sprint(want) || !strings.HasPrefix(id, "whep-") {
		t.Errorf("created %v, want %v", created.Endpoint, want)
	}
	if !strings.HasPrefix(created.Secret, "whsec_") || len(created.Secret) < 40 {
		t.Errorf("secret %q", created.Secret)
	}
	// The resource holds the endpoint; the secret is only in a Secret the endpoint owns.
	ep := h.endpoint(t, tenant, id)
	if ep.Spec.AccountID != tenant.Account.PublicID || ep.Spec.DisplayName != "CRM" || ep.Spec.SigningSecretRef == nil {
		t.Errorf("resource %+v", ep.Spec)
	}
	if raw := fmt.Sprintf("%+v", ep); strings.Contains(raw, created.Secret) {
		t.Error("the secret is on the endpoint object")
	}
	sec := &corev1.Secret{}
	if err := h.kube.Get(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: ep.Spec.SigningSecretRef.Name}, sec); err != nil {
		t.Fatal(err)
	}
	if string(sec.Data[switchboardv1alpha1.SigningSecretKey]) != created.Secret || !metav1.IsControlledBy(sec, ep) {
		t.Errorf("secret resource %v", sec.OwnerReferences)
	}

	list := h.api.Do(t, key, "GET", "/v1/webhooks", nil).Map(t)
	if eps := list["endpoints"].([]any); len(eps) != 1 || eps[0].(map[string]any)["public_id"] != id || list["can_add"] != true {
		t.Errorf("list %v", list)
	}

	resp = h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"name": "CRM 2", "url": "https://other.example.com/x",
		"events": []string{"voicemail.received"}, "status": "paused"})
	if resp.Status != 200 {
		t.Fatalf("patch: %s", resp)
	}
	got := resp.Map(t)["endpoint"].(map[string]any)
	if got["name"] != "CRM 2" || got["url"] != "https://other.example.com/x" || fmt.Sprint(got["events"]) != "[voicemail.received]" || got["status"] != "paused" {
		t.Errorf("patched %v", got)
	}
	if ep := h.endpoint(t, tenant, id); !ep.Spec.Paused || ep.Spec.URL != "https://other.example.com/x" {
		t.Errorf("resource after patch %+v", ep.Spec)
	}
	if resp := h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "active"}); resp.Status != 200 || resp.Map(t)["endpoint"].(map[string]any)["status"] != "active" {
		t.Errorf("resume: %s", resp)
	}

	// rate_limit: set by PATCH, kept when absent, removed by null; the resource holds it.
	if got := h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"rate_limit": 25}).Map(t)["endpoint"].(map[string]any); got["rate_limit"] != float64(25) {
		t.Errorf("rate_limit set: %v", got)
	}
	if ep := h.endpoint(t, tenant, id); ep.Spec.RateLimit == nil || *ep.Spec.RateLimit != 25 {
		t.Errorf("spec.rateLimit %v, want 25", ep.Spec.RateLimit)
	}
	if got := h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"name": "CRM 3"}).Map(t)["endpoint"].(map[string]any); got["rate_limit"] != float64(25) {
		t.Errorf("rate_limit after a PATCH without it: %v", got)
	}
	if got := h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"rate_limit": nil}).Map(t)["endpoint"].(map[string]any); got["rate_limit"] != nil {
		t.Errorf("rate_limit removed: %v", got)
	}
	if ep := h.endpoint(t, tenant, id); ep.Spec.RateLimit != nil {
		t.Errorf("spec.rateLimit %v after null", *ep.Spec.RateLimit)
	}

	resp = h.api.Do(t, key, "POST", "/v1/webhooks/"+id+"/rotate", nil)
	var rotated struct {
		Endpoint map[string]any `json:"endpoint"`
		Secret   string         `json:"secret"`
	}
	resp.JSON(t, &rotated)
	if resp.Status != 200 || rotated.Endpoint["public_id"] != id || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret {
		t.Fatalf("rotate: %s", resp)
	}
	if err := h.kube.Get(ctx, client.ObjectKeyFromObject(sec), sec); err != nil || string(sec.Data[switchboardv1alpha1.SigningSecretKey]) != rotated.Secret {
		t.Errorf("rotated secret not stored: %v", err)
	}

	other := apitest.NewTenant(t, h.st, plans.Business)
	for _, c := range []struct{ method, path string }{{"PATCH", "/v1/webhooks/" + id}, {"DELETE", "/v1/webhooks/" + id},
		{"POST", "/v1/webhooks/" + id + "/rotate"}, {"GET", "/v1/webhooks/" + id + "/deliveries"}, {"POST", "/v1/webhooks/" + id + "/test"}} {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"name": "x"}
		}
		if resp := h.api.Do(t, other.OwnerKey, c.method, c.path, body); resp.Status != 404 {
			t.Errorf("another account's %s %s: %s", c.method, c.path, resp)
		}
	}

	if resp := h.api.Do(t, key, "DELETE", "/v1/webhooks/"+id, nil); resp.Status != 204 || len(resp.Body) != 0 {
		t.Fatalf("delete: %s", resp)
	}
	if resp := h.api.Do(t, key, "DELETE", "/v1/webhooks/"+id, nil); resp.Status != 404 {
		t.Errorf("delete again: %s", resp)
	}
	if resp := h.api.Do(t, key, "PATCH", "/v1/webhooks/whep-nothing", map[string]any{"name": "x"}); resp.Status != 404 {
		t.Errorf("unknown: %s", resp)
	}
}

func (h *webhookHarness) testValidation(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	cases := []struct {
		body  map[string]any
		field string
		msg   string
	}{
		{map[string]any{"url": "https://hooks.example.com", "events": []string{"call.ended"}}, "name", "required"},
		{map[string]any{"name": "  ", "url": "https://hooks.example.com", "events": []string{"call.ended"}}, "name", "empty"},
		{map[string]any{"name": strings.Repeat("n", 101), "url": "https://hooks.example.com", "events": []string{"call.ended"}}, "name", "at most 100"},
		{map[string]any{"name": "x", "events": []string{"call.ended"}}, "url", "required"},
		{map[string]any{"name": "x", "url": "http://hooks.example.com", "events": []string{"call.ended"}}, "url", "https://"},
		{map[string]any{"name": "x", "url": "https://127.0.0.1/hook", "events": []string{"call.ended"}}, "url", "public internet"},
		{map[string]any{"name": "x", "url": "https://169.254.169.254/latest", "events": []string{"call.ended"}}, "url", "public internet"},
		{map[string]any{"name": "x", "url": "https://localhost:8443/", "events": []string{"call.ended"}}, "url", "public internet"},
		{map[string]any{"name": "x", "url": "https://sneaky.example.com/", "events": []string{"call.ended"}}, "url", "resolves to 10.0.0.8"},
		{map[string]any{"name": "x", "url": "https://hooks.example.com"}, "events", "required"},
		{map[string]any{"name": "x", "url": "https://hooks.example.com", "events": []string{}}, "events", "one or more"},
		{map[string]any{"name": "x", "url": "https://hooks.example.com", "events": []string{"test"}}, "events", `"test" is not`},
		{map[string]any{"name": "x", "url": "https://hooks.example.com", "events": []string{"call.started"}}, "events", `"call.started" is not`},
		{map[string]any{"name": "x", "url": "https://hooks.example.com:99999/", "events": []string{"call.ended"}}, "url", "port"},
		{map[string]any{"name": "x", "url": "https://hooks.example.com", "events": []string{"call.ended"}, "rate_limit": 0}, "rate_limit", "from 1 to 1000"},
		{map[string]any{"name": "x", "url": "https://hooks.example.com", "events": []string{"call.ended"}, "rate_limit": 1001}, "rate_limit", "from 1 to 1000"},
	}
	for _, c := range cases {
		resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks", c.body)
		var body struct {
			Errors map[string][]string `json:"errors"`
		}
		resp.JSON(t, &body)
		if resp.Status != 422 || len(body.Errors[c.field]) == 0 || !strings.Contains(body.Errors[c.field][0], c.msg) {
			t.Errorf("%v: got %s, want 422 on %s containing %q", c.body, resp, c.field, c.msg)
		}
	}
	// The scheme is case-insensitive: an upper-case one is saved in its usual form, not
	// refused by the resource's own validation.
	if got := h.create(t, tenant.OwnerKey, "HTTPS://hooks.example.com/upper"); got["url"] != "https://hooks.example.com/upper" {
		t.Errorf("upper-case scheme saved as %v", got["url"])
	}
	limited := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks", map[string]any{"name": "limited", "url": "https://hooks.example.com/limited",
		"events": []string{"call.ended"}, "rate_limit": 1000})
	if limited.Status != 201 || limited.Map(t)["endpoint"].(map[string]any)["rate_limit"] != float64(1000) {
		t.Errorf("create with rate_limit 1000: %s", limited)
	}
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/a")["public_id"].(string)
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"status": "switched_off"}, "status"},
		{map[string]any{"url": "https://10.1.1.1/"}, "url"},
		{map[string]any{"events": []string{"nope"}}, "events"},
		{map[string]any{"name": ""}, "name"},
		{map[string]any{"status": 1}, "status"},
		{map[string]any{"url": "Https://hooks.example.com:65536/"}, "url"},
		{map[string]any{"rate_limit": -5}, "rate_limit"},
		{map[string]any{"rate_limit": "fast"}, "rate_limit"},
		{map[string]any{"rate_limit": 2.5}, "rate_limit"},
	} {
		resp := h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/webhooks/"+id, c.body)
		if resp.Status != 422 || !strings.Contains(string(resp.Body), `"`+c.field+`"`) {
			t.Errorf("PATCH %v: %s", c.body, resp)
		}
	}
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks", `{"name":`); resp.Status != 400 {
		t.Errorf("malformed: %s", resp)
	}
}

func (h *webhookHarness) testLimit(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	for i := 0; i < 5; i++ {
		h.create(t, tenant.OwnerKey, fmt.Sprintf("https://hooks.example.com/%d", i))
	}
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks", map[string]any{"name": "6th", "url": "https://hooks.example.com/6", "events": []string{"call.ended"}})
	if resp.Status != 409 || !strings.Contains(resp.Map(t)["message"].(string), "5 webhook endpoints") {
		t.Errorf("sixth: %s", resp)
	}
	list := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks", nil).Map(t)
	if list["can_add"] != false || len(list["endpoints"].([]any)) != 5 {
		t.Errorf("list at the limit: %v", list)
	}
}

func (h *webhookHarness) testKubectl(t *testing.T) {
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/k")["public_id"].(string)

	// kubectl patch ... spec.paused=true
	ep := h.endpoint(t, tenant, id)
	if err := h.kube.Patch(ctx, ep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))); err != nil {
		t.Fatal(err)
	}
	if got := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks", nil).Map(t)["endpoints"].([]any)[0].(map[string]any); got["status"] != "paused" {
		t.Errorf("after kubectl pause: %v", got)
	}

	// A switched-off endpoint (as the controller leaves it: status only) shows paused with
	// failing_since; setting it active switches it on.
	if resp := h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "active"}); resp.Status != 200 {
		t.Fatalf("resume: %s", resp)
	}
	failing := metav1.NewTime(h.clk.Now().Add(-25 * time.Hour))
	switchedOff := metav1.NewTime(h.clk.Now().Add(-time.Hour).Truncate(time.Second))
	ep = h.endpoint(t, tenant, id)
	base := ep.DeepCopy()
	ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
	ep.Status.FailingSince, ep.Status.SwitchedOffAt = &failing, &switchedOff
	if err := h.kube.Status().Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	got := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks", nil).Map(t)["endpoints"].([]any)[0].(map[string]any)
	if got["status"] != "paused" || got["failing_since"] != "2026-03-01T08:00:00Z" {
		t.Errorf("switched off: %v", got)
	}
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil); resp.Status != 409 || !strings.Contains(string(resp.Body), "switched off") {
		t.Errorf("test on a switched-off endpoint: %s", resp)
	}
	resp := h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "active"})
	if e := resp.Map(t)["endpoint"].(map[string]any); resp.Status != 200 || e["status"] != "active" || e["failing_since"] != nil {
		t.Errorf("switch on: %s", resp)
	}
	if ep := h.endpoint(t, tenant, id); ep.Spec.Paused || ep.Spec.ActivatedAt == nil || ep.Spec.ActivatedAt.Before(&switchedOff) {
		t.Errorf("switch on wrote paused %v, activatedAt %v (switched off at %v)", ep.Spec.Paused, ep.Spec.ActivatedAt, switchedOff)
	}

	// An endpoint an earlier release switched off (spec.paused and an annotation) is switched
	// off too, and switching it on unpauses it.
	ep = h.endpoint(t, tenant, id)
	base = ep.DeepCopy()
	ep.Status.SwitchedOffAt = nil
	if err := h.kube.Status().Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := h.kube.Patch(ctx, ep, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+send.AnnotationSwitchedOff+`":"2026-03-02T08:00:00Z"}},"spec":{"paused":true}}`))); err != nil {
		t.Fatal(err)
	}
	base = ep.DeepCopy()
	ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
	ep.Status.FailingSince = &failing
	if err := h.kube.Status().Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	got = h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks", nil).Map(t)["endpoints"].([]any)[0].(map[string]any)
	if got["status"] != "paused" || got["failing_since"] != "2026-03-01T08:00:00Z" {
		t.Errorf("switched off by an earlier release: %v", got)
	}
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil); resp.Status != 409 || !strings.Contains(string(resp.Body), "switched off") {
		t.Errorf("test on an endpoint switched off by an earlier release: %s", resp)
	}
	resp = h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "active"})
	if e := resp.Map(t)["endpoint"].(map[string]any); resp.Status != 200 || e["status"] != "active" || e["failing_since"] != nil {
		t.Errorf("switch on: %s", resp)
	}
	if ep := h.endpoint(t, tenant, id); ep.Spec.Paused || ep.Annotations[send.AnnotationSwitchedOff] != "" {
		t.Errorf("switch on left paused %v, annotations %v", ep.Spec.Paused, ep.Annotations)
	}

	// An endpoint made with kubectl apply is listed too.
	made := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "crm-kubectl", Namespace: tenancy.Namespace(tenant.Account.PublicID)},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: tenant.Account.PublicID, DisplayName: "kubectl", URL: "https://hooks.example.com/kc",
			Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventTranscriptReady}}}
	if err := h.kube.Create(ctx, made); err != nil {
		t.Fatal(err)
	}
	eps := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks", nil).Map(t)["endpoints"].([]any)
	if len(eps) != 2 || (eps[0].(map[string]any)["public_id"] != "crm-kubectl" && eps[1].(map[string]any)["public_id"] != "crm-kubectl") {
		t.Errorf("list with a kubectl endpoint: %v", eps)
	}
	// Its owner reads its secret once by rotating it.
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/crm-kubectl/rotate", nil); resp.Status != 200 || !strings.HasPrefix(resp.Map(t)["secret"].(string), "whsec_") {
		t.Errorf("rotate a kubectl endpoint: %s", resp)
	}
}

func (h *webhookHarness) testTestEvent(t *testing.T) {
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/t")["public_id"].(string)
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil)
	if resp.Status != 202 || resp.Map(t)["queued"] != true {
		t.Fatalf("test: %s", resp)
	}
	// The test event is queued in the outbox for this endpoint alone, and listed as pending
	// before the dispatcher takes it.
	var body string
	var eventID uuid.UUID
	var dispatched *time.Time
	if err := storetest.SQL(t, h.st).QueryRow(ctx, `SELECT id, convert_from(body, 'UTF8'), dispatched_at FROM events
		WHERE account_id = $1 AND endpoint_public_id = $2`, tenant.Account.ID, id).Scan(&eventID, &body, &dispatched); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"test":true`) || !strings.Contains(body, `"event":"test"`) || dispatched != nil {
		t.Errorf("event %s dispatched %v", body, dispatched)
	}
	checkPending := func(when string) {
		deliveries := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks/"+id+"/deliveries", nil).Map(t)["deliveries"].([]any)
		if len(deliveries) != 1 || deliveries[0].(map[string]any)["status"] != "pending" || deliveries[0].(map[string]any)["event"] != "test" ||
			deliveries[0].(map[string]any)["event_id"] != eventID.String() {
			t.Errorf("deliveries %s: %v", when, deliveries)
		}
	}
	checkPending("while queued")
	// Another endpoint of the account does not receive it.
	other := h.create(t, tenant.OwnerKey, "https://hooks.example.com/t2")["public_id"].(string)
	dispatcher := &engine.Dispatcher{Client: h.kube, Reader: h.kube, Store: h.st, Clock: h.clk, Log: logr.Discard()}
	if _, err := dispatcher.DispatchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	list := &switchboardv1alpha1.WebhookDeliveryList{}
	if err := h.kube.List(ctx, list, client.InNamespace(tenancy.Namespace(tenant.Account.PublicID))); err != nil || len(list.Items) != 1 {
		t.Fatalf("deliveries %v %v", list.Items, err)
	}
	d := list.Items[0]
	if d.Spec.EventType != switchboardv1alpha1.EventTest || d.Spec.EndpointName != id || d.Spec.EventID != eventID.String() ||
		len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Name != id {
		t.Errorf("delivery %+v (other endpoint %s)", d, other)
	}
	checkPending("once dispatched")

	h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "paused"})
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil); resp.Status != 409 || !strings.Contains(string(resp.Body), "paused") {
		t.Errorf("test on a paused endpoint: %s", resp)
	}
}

func (h *webhookHarness) testDeliveries(t *testing.T) {
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/d")["public_id"].(string)
	now := h.clk.Now()
	record := func(status send.DeliveryStatus, age time.Duration, attempts, code int, lastErr string) uuid.UUID {
		ev := uuid.New()
		// The event, dispatched long ago (a resend sends its body again).
		if _, err := storetest.SQL(t, h.st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
			VALUES ($1, $2, 'call.ended', $3, $4, $4)`, ev, tenant.Account.ID, []byte(`{"event":"call.ended"}`), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		err := h.st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: tenant.Account.PublicID, EndpointPublicID: id,
			DeliveryName: send.DeliveryName(ev.String(), id, ""), EventID: ev, EventType: "call.ended", Status: status, Attempts: attempts,
			ResponseCode: code, LastError: lastErr, CreatedAt: now.Add(-age), FinishedAt: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	failed := record("failed", 2*time.Hour, 6, 500, "HTTP 500")
	succeeded := record("succeeded", time.Hour, 1, 204, "")
	cancelled := record("cancelled", 3*time.Hour, 0, 0, "paused")
	record("succeeded", 31*24*time.Hour, 1, 200, "") // older than 30 days

	// A live delivery in retry.
	ep := h.endpoint(t, tenant, id)
	retryingID := uuid.New()
	live := send.NewDelivery(ep, retryingID.String(), "call.ended", "", "")
	if err := h.kube.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	next := metav1.NewTime(now.Add(5 * time.Minute))
	live.Status = switchboardv1alpha1.WebhookDeliveryStatus{Phase: switchboardv1alpha1.WebhookDeliveryPhaseRetrying, Attempts: 2, NextAttemptAt: &next, LastResponseCode: 503, LastError: "HTTP 503"}
	if err := h.kube.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}

	resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/webhooks/"+id+"/deliveries", nil)
	var out struct {
		Deliveries []map[string]any `json:"deliveries"`
	}
	resp.JSON(t, &out)
	if resp.Status != 200 || len(out.Deliveries) != 4 {
		t.Fatalf("deliveries: %s", resp)
	}
	order := []string{}
	for _, d := range out.Deliveries {
		order = append(order, d["event_id"].(string))
	}
	// The live one was created now (real time of the API server), then by age.
	if fmt.Sprint(order[1:]) != fmt.Sprint([]string{succeeded.String(), failed.String(), cancelled.String()}) {
		t.Errorf("order %v", order)
	}
	var liveRow map[string]any
	for _, d := range out.Deliveries {
		if d["event_id"] == retryingID.String() {
			liveRow = d
		}
	}
	if liveRow["status"] != "retrying" || liveRow["attempts"] != float64(2) || liveRow["response_code"] != float64(503) ||
		liveRow["next_attempt_at"] != "2026-03-02T09:05:00Z" || liveRow["last_error"] != "HTTP 503" {
		t.Errorf("live row %v", liveRow)
	}
	f := out.Deliveries[2]
	if f["status"] != "failed" || f["attempts"] != float64(6) || f["response_code"] != float64(500) || f["next_attempt_at"] != nil || f["event"] != "call.ended" {
		t.Errorf("failed row %v", f)
	}

	// Resend: failed and cancelled are queued again with the same event id.
	for _, ev := range []uuid.UUID{failed, cancelled} {
		resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/deliveries/"+ev.String()+"/resend", nil)
		if resp.Status != 202 || resp.Map(t)["queued"] != true {
			t.Errorf("resend %s: %s", ev, resp)
		}
		// Queued in the outbox, so pending again: a second resend is refused until it finishes.
		if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/deliveries/"+ev.String()+"/resend", nil); resp.Status != 409 {
			t.Errorf("resend while queued: %s", resp)
		}
		// The dispatcher makes it a fresh delivery of the same event, naming the one it repeats.
		dispatcher := &engine.Dispatcher{Client: h.kube, Reader: h.kube, Store: h.st, Clock: h.clk, Log: logr.Discard()}
		if _, err := dispatcher.DispatchOnce(ctx); err != nil {
			t.Fatal(err)
		}
		list := &switchboardv1alpha1.WebhookDeliveryList{}
		_ = h.kube.List(ctx, list, client.InNamespace(ep.Namespace), client.MatchingLabels{send.LabelEventID: ev.String()})
		if len(list.Items) != 1 || list.Items[0].Spec.ResendOf != send.DeliveryName(ev.String(), id, "") || list.Items[0].Spec.EventID != ev.String() {
			t.Errorf("resent delivery %+v", list.Items)
		}
		if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/deliveries/"+ev.String()+"/resend", nil); resp.Status != 409 {
			t.Errorf("resend while pending: %s", resp)
		}
	}
	// An event id in upper case names the same event (here: pending again, so 409, not 404);
	// other spellings that uuid.Parse takes are not event ids.
	for ev, want := range map[string]int{succeeded.String(): 409, retryingID.String(): 409, uuid.NewString(): 404, "not-a-uuid": 404,
		strings.ToUpper(failed.String()): 409, "{" + failed.String() + "}": 404, strings.ReplaceAll(failed.String(), "-", ""): 404} {
		if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks/"+id+"/deliveries/"+ev+"/resend", nil); resp.Status != want {
			t.Errorf("resend %s: %s, want %d", ev, resp, want)
		}
	}
}

func (h *webhookHarness) testAccess(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/acc")["public_id"].(string)
	// A key made while its user was an owner, who has since become a member.
	member := tenant.NewMember(t, h.st, true, false)
	if _, err := storetest.SQL(t, h.st).Exec(context.Background(), `UPDATE users SET role = 'owner' WHERE id = $1`, member.ID); err != nil {
		t.Fatal(err)
	}
	memberKey := apitest.NewKey(t, h.st, member.ID, string(auth.WebhooksManage))
	if _, err := storetest.SQL(t, h.st).Exec(context.Background(), `UPDATE users SET role = 'member' WHERE id = $1`, member.ID); err != nil {
		t.Fatal(err)
	}
	noPerm := apitest.NewKey(t, h.st, tenant.Owner.ID, string(auth.Read), string(auth.ContactsWrite))
	routes := []struct{ method, path string }{{"GET", "/v1/webhooks"}, {"POST", "/v1/webhooks"}, {"PATCH", "/v1/webhooks/" + id},
		{"DELETE", "/v1/webhooks/" + id}, {"POST", "/v1/webhooks/" + id + "/rotate"}, {"POST", "/v1/webhooks/" + id + "/test"},
		{"GET", "/v1/webhooks/" + id + "/deliveries"}, {"POST", "/v1/webhooks/" + id + "/deliveries/" + uuid.NewString() + "/resend"},
		{"POST", "/v1/webhooks/" + id + "/recover"}}
	for _, r := range routes {
		if resp := h.api.Do(t, memberKey, r.method, r.path, map[string]any{}); resp.Status != 403 || !strings.Contains(string(resp.Body), "owner") {
			t.Errorf("member %s %s: %s", r.method, r.path, resp)
		}
		if resp := h.api.Do(t, noPerm, r.method, r.path, map[string]any{}); resp.Status != 403 || !strings.Contains(string(resp.Body), "webhooks:manage") {
			t.Errorf("without webhooks:manage %s %s: %s", r.method, r.path, resp)
		}
	}
	// Without Integrations: add, test, resend and recover are refused; the rest keep working.
	team := apitest.NewTenant(t, h.st, plans.Team)
	for _, r := range []struct{ method, path string }{{"POST", "/v1/webhooks"}, {"POST", "/v1/webhooks/whep-x/test"},
		{"POST", "/v1/webhooks/whep-x/deliveries/" + uuid.NewString() + "/resend"}, {"POST", "/v1/webhooks/whep-x/recover"}} {
		resp := h.api.Do(t, team.OwnerKey, r.method, r.path, map[string]any{})
		if resp.Status != 403 || resp.Map(t)["reason"] != plans.ReasonAddonRequired {
			t.Errorf("team %s %s: %s", r.method, r.path, resp)
		}
	}
	// The list keeps working, and says an endpoint cannot be added while adding is refused.
	if resp := h.api.Do(t, team.OwnerKey, "GET", "/v1/webhooks", nil); resp.Status != 200 || resp.Map(t)["can_add"] != false {
		t.Errorf("team list: %s, want 200 with can_add false", resp)
	}
	if resp := h.api.Do(t, team.OwnerKey, "PATCH", "/v1/webhooks/whep-x", map[string]any{"name": "x"}); resp.Status != 404 {
		t.Errorf("team patch: %s", resp)
	}
}

func (h *webhookHarness) testRateLimits(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	// Invalid bodies still count: the limit is on requests.
	for i := 1; i <= 21; i++ {
		resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/webhooks", map[string]any{"name": "x"})
		switch {
		case i <= 20 && resp.Status != 422:
			t.Fatalf("add %d: %s", i, resp)
		case i == 21 && (resp.Status != 429 || resp.Header.Get("Retry-After") == ""):
			t.Fatalf("add 21: %s", resp)
		}
	}
	other := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, other.OwnerKey, "https://hooks.example.com/rl")["public_id"].(string)
	h.api.Do(t, other.OwnerKey, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "paused"})
	for i := 1; i <= 11; i++ {
		resp := h.api.Do(t, other.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil)
		if (i <= 10 && resp.Status != 409) || (i == 11 && resp.Status != 429) {
			t.Fatalf("test %d: %s", i, resp)
		}
	}
	for i := 1; i <= 31; i++ {
		resp := h.api.Do(t, other.OwnerKey, "POST", "/v1/webhooks/"+id+"/deliveries/"+uuid.NewString()+"/resend", nil)
		if (i <= 30 && resp.Status != 404) || (i == 31 && resp.Status != 429) {
			t.Fatalf("resend %d: %s", i, resp)
		}
	}
	// A new minute opens a new window. (The per-user limit is 60 a minute in all.)
	h.clk.Step(time.Minute)
	if resp := h.api.Do(t, other.OwnerKey, "POST", "/v1/webhooks/"+id+"/test", nil); resp.Status != 409 {
		t.Errorf("next minute: %s", resp)
	}
}

func (h *webhookHarness) testBadInput(t *testing.T) {
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	id := h.create(t, tenant.OwnerKey, "https://hooks.example.com/bad")["public_id"].(string)
	bodies := []any{"{", "[]", `{"name": 5, "status": ["x"], "events": "call.ended", "url": 7}`, "null", `"text"`, []byte{0xff, 0xfe}}
	paths := []struct{ method, path string }{{"POST", "/v1/webhooks"}, {"PATCH", "/v1/webhooks/" + id}, {"POST", "/v1/webhooks/" + id + "/rotate"},
		{"GET", "/v1/webhooks/zz_Bad..ID"}, {"PATCH", "/v1/webhooks/zz_Bad..ID"}, {"POST", "/v1/webhooks/" + id + "/deliveries/zz/resend"}}
	for _, p := range paths {
		for _, b := range bodies {
			h.clk.Step(time.Minute) // stay inside the per-minute limits
			resp := h.api.DoUnchecked(t, tenant.OwnerKey, p.method, p.path, b)
			if resp.Status >= 500 {
				t.Errorf("%s %s %q: %s", p.method, p.path, b, resp)
			}
		}
	}
}
