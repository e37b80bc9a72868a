package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/api/client"
)

// checkGoClient drives the whole running service (started by TestRunServesBothAPIsAndStops:
// controllers register process-wide names, so one Run per test process) with the generated Go
// client (api/client), so the client, the committed description and the server cannot drift
// apart. The demo account has callCount calls (business calls and a few screened out).
func checkGoClient(t *testing.T, ctx context.Context, apiAddr, ownerKey string, callCount int) {
	t.Helper()
	// The service serves the committed description (clients are generated from the file).
	resp, err := http.Get("http://" + apiAddr + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	committed, err := os.ReadFile("../../api/openapi/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	// The committed description names no server and no limit; the running one names its own
	// (the default 60 requests a minute). Everything else is the same.
	want := bytes.ReplaceAll(withoutServers(t, committed), []byte("to a number the operator sets"), []byte("on this server to 60"))
	if !bytes.Equal(withoutServers(t, served), want) {
		t.Error("the running service serves a description other than api/openapi/v1.json: run make generate")
	}

	api, err := client.New("http://"+apiAddr+"/v1", ownerKey, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	me, err := api.GetMeWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me.JSON200 == nil || me.JSON200.Tenant.Name != "Acme Plumbing Ltd" || me.JSON200.User.Role != client.Owner {
		t.Fatalf("GET /me: %d %s", me.StatusCode(), me.Body)
	}
	if me.HTTPResponse.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
	first := api.LastRateLimit()
	if first.Limit != 60 || first.Remaining > 59 || first.Reset <= 0 || first.Reset > time.Minute {
		t.Errorf("rate limit after one request: %+v", first)
	}

	perPage := 5
	calls, err := api.ListCallsWithResponse(ctx, &client.ListCallsParams{PerPage: &perPage})
	if err != nil {
		t.Fatal(err)
	}
	if calls.JSON200 == nil || len(calls.JSON200.Data) != 5 || calls.JSON200.Total < 6 || calls.JSON200.Total > callCount || calls.JSON200.NextPageUrl == nil {
		t.Fatalf("GET /calls: %d %s", calls.StatusCode(), calls.Body)
	}
	one, err := api.GetCallWithResponse(ctx, calls.JSON200.Data[0].PublicId)
	if err != nil || one.JSON200 == nil || one.JSON200.PublicId != calls.JSON200.Data[0].PublicId {
		t.Fatalf("GET /calls/{call}: %v %s", err, one.Body)
	}
	if second := api.LastRateLimit(); second.Remaining >= first.Remaining {
		t.Errorf("Remaining did not fall: %d then %d", first.Remaining, second.Remaining)
	}

	// What the server refuses comes back typed.
	tooBig := 101
	refused, err := api.ListCallsWithResponse(ctx, &client.ListCallsParams{PerPage: &tooBig})
	if err != nil {
		t.Fatal(err)
	}
	if refused.JSON422 == nil || len(refused.JSON422.Errors["per_page"]) == 0 {
		t.Errorf("per_page=101: %d %s", refused.StatusCode(), refused.Body)
	}
	missing, err := api.GetCallWithResponse(ctx, "call_nope")
	if err != nil || missing.JSON404 == nil || missing.JSON404.Message == "" {
		t.Errorf("unknown call: %v %d %s", err, missing.StatusCode(), missing.Body)
	}

	hooks, err := api.ListWebhooksWithResponse(ctx)
	if err != nil || hooks.JSON200 == nil || len(hooks.JSON200.Events) != 3 {
		t.Fatalf("GET /webhooks: %v %s", err, hooks.Body)
	}
}

func withoutServers(t *testing.T, doc []byte) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	delete(d, "servers")
	out, _ := json.Marshal(d)
	return out
}
