package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/google/uuid"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// claimRecipe prepares a request that succeeds on one route: the path with its ids, and the body.
type claimRecipe func(t *testing.T) (path string, body any)

// claimNotCommitted reports whether the server logged that route's work committed without
// its Idempotency-Key claim.
func (l *logLines) claimNotCommitted(route string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, "without its Idempotency-Key claim") && strings.Contains(line, `"route":"`+route+`"`) {
			return true
		}
	}
	return false
}

// unclaimedWork sends, with an Idempotency-Key, a succeeding request (by its recipe) to every
// route of c under prefix declared idempotent with its work in the store, and then its repeat.
// It returns each route whose work committed without the claim, with no recipe, that did not
// succeed, or whose repeat was not replayed, and how many routes it checked.
func unclaimedWork(t *testing.T, c *restful.Container, api *apitest.API, apiKey, prefix string, logs *logLines,
	recipes map[string]claimRecipe) (problems map[string]string, checked int) {
	t.Helper()
	problems = map[string]string{}
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			route := r.Method + " " + r.Path
			if apiserver.IdempotentWork(r) != "store" || !strings.HasPrefix(r.Path, prefix) {
				continue
			}
			checked++
			recipe, ok := recipes[route]
			if !ok {
				problems[route] = "no recipe: add a succeeding request for it to this check"
				continue
			}
			path, body := recipe(t)
			key := http.Header{"Idempotency-Key": {"claim-check " + route}}
			first := api.DoWithHeaders(t, apiKey, r.Method, path, body, key)
			again := api.DoWithHeaders(t, apiKey, r.Method, path, body, key)
			switch {
			case first.Status < 200 || first.Status > 299:
				problems[route] = "did not succeed: " + first.String()
			case logs.claimNotCommitted(route):
				problems[route] = "its work committed without the Idempotency-Key claim"
			case again.Header.Get("Idempotent-Replayed") != "true":
				problems[route] = fmt.Sprintf("the repeat was not replayed: %s", again)
			}
		}
	}
	return problems, checked
}

// TestIdempotentRoutesCommitTheirClaim: every route declared idempotent with its work in the
// store commits the key's claim in the work's own transaction; a route that writes without
// handing the claim to the store is caught.
func TestIdempotentRoutesCommitTheirClaim(t *testing.T) {
	st := storetest.NewStore(t)
	logs := &logLines{}
	srv := httptest.NewUnstartedServer(nil)
	c := apiserver.New(apiserver.Config{
		BaseURL: "http://" + srv.Listener.Addr().String(), Clock: clocktesting.NewFakeClock(transcribeNow), Log: logs.logger(),
		RequestsPerMinute: 100000, Kube: fake.NewClientBuilder().WithScheme(app.Scheme()).Build(),
	}, st, apiserver.UnclaimedWrite)
	srv.Config.Handler = c
	srv.Start()
	t.Cleanup(srv.Close)
	api := apitest.New(srv.URL)
	tenant := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID

	recipes := map[string]claimRecipe{
		"POST /v1/contacts/": func(*testing.T) (string, any) {
			return "/v1/contacts", map[string]any{"display_name": "Ada Lovelace", "phones": phones("+447700900123")}
		},
		"POST /v1/contacts/bulk-upsert": func(*testing.T) (string, any) {
			return "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": bulkContacts(2, "claim")}
		},
		"POST /v1/notifications/read-all": func(t *testing.T) (string, any) {
			ibNotification(t, st, acct, tenant.Owner.ID, "Unread", transcribeNow)
			return "/v1/notifications/read-all", nil
		},
		"POST /v1/notifications/{notification}/read": func(t *testing.T) (string, any) {
			n := ibNotification(t, st, acct, tenant.Owner.ID, "To read", transcribeNow)
			return "/v1/notifications/" + n.ID + "/read", nil
		},
		"POST /v1/calls/{call}/transcribe": func(t *testing.T) (string, any) {
			txtest.Fund(t, st, acct, 1000, store.AccountSettings{TranscriptionRatePencePerMin: intp(6)})
			call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 150})
			return "/v1/calls/" + call.PublicID + "/transcribe", nil
		},
		"POST " + apiserver.UnclaimedWritePath + "/": func(*testing.T) (string, any) {
			return apiserver.UnclaimedWritePath, nil
		},
	}
	problems, checked := unclaimedWork(t, c, api, tenant.OwnerKey, "/v1/", logs, recipes)
	if checked < 6 { // contacts 2, notifications 2, transcribe, and the unclaimed route
		t.Errorf("only %d routes declared idempotent with their work in the store", checked)
	}
	unclaimed := "POST " + apiserver.UnclaimedWritePath + "/"
	if problems[unclaimed] != "its work committed without the Idempotency-Key claim" {
		t.Errorf("a route writing without its claim was not caught: %q", problems[unclaimed])
	}
	delete(problems, unclaimed)
	for route, problem := range problems {
		t.Errorf("%s: %s", route, problem)
	}
}

// testClaimsCommitted: the webhook routes whose work is in the store commit the key's claim
// with it (create and rotate write to kube-apiserver; their claim is completed by the saved
// answer, see testIdempotentCreate).
func (h *webhookHarness) testClaimsCommitted(t *testing.T) {
	logs := &logLines{}
	srv := httptest.NewUnstartedServer(nil)
	c := apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: h.clk, Log: logs.logger(),
		RequestsPerMinute: 100000, Kube: h.kube}, h.st, apiserver.Webhooks(apiserver.WebhooksConfig{}))
	srv.Config.Handler = c
	srv.Start()
	t.Cleanup(srv.Close)
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	endpoint := func(t *testing.T) string {
		return h.create(t, tenant.OwnerKey, "https://hooks.example.com/claims")["public_id"].(string)
	}
	recipes := map[string]claimRecipe{
		"POST /v1/webhooks/{endpoint}/test": func(t *testing.T) (string, any) {
			return "/v1/webhooks/" + endpoint(t) + "/test", nil
		},
		"POST /v1/webhooks/{endpoint}/deliveries/{eventId}/resend": func(t *testing.T) (string, any) {
			id := endpoint(t)
			ev := h.failedDelivery(t, tenant, id)
			return "/v1/webhooks/" + id + "/deliveries/" + ev.String() + "/resend", nil
		},
		"POST /v1/webhooks/{endpoint}/recover": func(t *testing.T) (string, any) {
			return "/v1/webhooks/" + endpoint(t) + "/recover", map[string]any{"since": h.clk.Now().AddDate(0, 0, -1).Format(time.RFC3339)}
		},
	}
	problems, checked := unclaimedWork(t, c, apitest.New(srv.URL), tenant.OwnerKey, "/v1/webhooks", logs, recipes)
	if checked < 3 {
		t.Errorf("only %d webhook routes declared idempotent with their work in the store", checked)
	}
	for route, problem := range problems {
		t.Errorf("%s: %s", route, problem)
	}
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/v1/webhooks") && apiserver.IdempotentWork(r) == "" {
				t.Errorf("POST %s is not declared idempotent", r.Path)
			}
		}
	}
}

// failedDelivery records an event, dispatched an hour ago, whose delivery to the endpoint id
// failed.
func (h *webhookHarness) failedDelivery(t *testing.T, tenant apitest.Tenant, id string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	at := h.clk.Now().Add(-time.Hour)
	ev := uuid.New()
	if _, err := storetest.SQL(t, h.st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
		VALUES ($1, $2, 'call.ended', $3, $4, $4)`, ev, tenant.Account.ID, []byte(`{"event":"call.ended"}`), at); err != nil {
		t.Fatal(err)
	}
	if err := h.st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: tenant.Account.PublicID, EndpointPublicID: id,
		DeliveryName: send.DeliveryName(ev.String(), id, ""), EventID: ev, EventType: "call.ended", Status: "failed", Attempts: 6,
		ResponseCode: 500, LastError: "HTTP 500", CreatedAt: at, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	return ev
}
