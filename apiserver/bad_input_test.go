package apiserver_test

import (
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// No bad input reaches a 500: every route, fed broken bodies and nonsense query parameters,
// answers with a documented status (the client checks each answer against the description).
func TestBadInputNeverGives500(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	bodies := []any{"{", "[]", `{"name": 5, "status": ["x"], "events": "call.ended", "contacts": {}}`, "null", `"text"`, []byte{0xff, 0xfe}}
	query := "?per_page=abc&page=-1&period=nope&date_from=2026-13-45&date_to=x&status=zzz&days=8&unread=maybe&search="
	for _, r := range routeRules(t, h) {
		if !r.Protected {
			continue
		}
		for _, b := range bodies {
			var body any
			if r.Method != "GET" && r.Method != "DELETE" {
				body = b
			}
			resp := h.api.Do(t, tenant.OwnerKey, r.Method, r.Path+query, body)
			if resp.Status >= 500 {
				t.Errorf("%s %s%s body %q: got %s, want a 4xx", r.Method, r.Path, query, b, resp)
			}
			// Routes without parameters or a body may ignore them; the rest must refuse with a message.
			if resp.Status >= 400 && resp.Map(t)["message"] == "" {
				t.Errorf("%s %s: 4xx without a message: %s", r.Method, r.Path, resp)
			}
		}
	}
}

// 422 bodies have the spec's shape {message, errors: {field: [messages]}} for wrong types,
// unknown enum values, bad dates and out-of-range paging.
func TestValidationErrorShape(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	task, err := h.store.CreateTask(t.Context(), store.NewTask{AccountID: tenant.Account.ID, Text: "Ring back"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		body         any
		field        string
	}{
		{"GET", "/v1/calls?per_page=101", nil, "per_page"},
		{"GET", "/v1/calls?per_page=0", nil, "per_page"},
		{"GET", "/v1/calls?page=abc", nil, "page"},
		{"GET", "/v1/calls?status=exploded", nil, "status"},
		{"GET", "/v1/calls?period=custom&date_from=2026-02-30&date_to=2026-03-01", nil, "date_from"},
		{"GET", "/v1/calls?period=custom&date_from=2026-03-02&date_to=2026-03-01", nil, "date_from"},
		{"GET", "/v1/analytics?days=8", nil, "days"},
		{"PATCH", "/v1/tasks/" + task.PublicID, map[string]any{"status": 5}, "status"},
		{"PATCH", "/v1/tasks/" + task.PublicID, map[string]any{"status": "closed"}, "status"},
		{"POST", "/v1/contacts", map[string]any{"display_name": []string{"x"}}, "display_name"},
		// A body that is JSON but not an object is still the 422 shape, named "body".
		{"PATCH", "/v1/tasks/" + task.PublicID, "[]", "body"},
		{"PATCH", "/v1/tasks/" + task.PublicID, `"done"`, "body"},
	}
	for _, c := range cases {
		resp := h.api.Do(t, tenant.OwnerKey, c.method, c.path, c.body)
		var body struct {
			Message string              `json:"message"`
			Errors  map[string][]string `json:"errors"`
		}
		resp.JSON(t, &body)
		if resp.Status != 422 || body.Message == "" || len(body.Errors[c.field]) == 0 || body.Errors[c.field][0] == "" {
			t.Errorf("%s %s %v: got %s, want 422 with errors.%s", c.method, c.path, c.body, resp, c.field)
		}
	}
	// Malformed JSON is a 400 with a message, never a 500.
	resp := h.api.Do(t, tenant.OwnerKey, "PATCH", "/v1/tasks/"+task.PublicID, `{"status":`)
	if resp.Status != 400 || resp.Map(t)["message"] == "" {
		t.Errorf("malformed JSON: got %s, want 400", resp)
	}
}

// Ids and free text that PostgreSQL cannot take as text (a NUL, invalid UTF-8) name no record
// and match nothing: an id is a 404, a query parameter a 422, never a 500.
func TestUnstorableTextInIdsAndQueries(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	contact := map[string]any{"display_name": "X", "phones": []any{}}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"GET", "/v1/contacts?search=%00", nil, 422, "search"},
		{"GET", "/v1/contacts?search=%FF", nil, 422, "search"},
		{"GET", "/v1/contacts?source=ab%00", nil, 422, "source"},
		{"GET", "/v1/contacts?source=%C3", nil, 422, "source"},
		{"PUT", "/v1/contacts/%00", contact, 404, ""},
		{"DELETE", "/v1/contacts/ct_%FF", nil, 404, ""},
		{"PATCH", "/v1/tasks/%00", map[string]any{"status": "done"}, 404, ""},
		{"PATCH", "/v1/tasks/%FF", map[string]any{"status": "done"}, 404, ""},
		{"GET", "/v1/sms/conversations/%00/messages", nil, 404, ""},
		{"GET", "/v1/sms/conversations/%FE/messages", nil, 404, ""},
	} {
		resp := h.api.Do(t, tenant.OwnerKey, c.method, c.path, c.body)
		var body struct {
			Message string              `json:"message"`
			Errors  map[string][]string `json:"errors"`
		}
		resp.JSON(t, &body)
		if resp.Status != c.status || body.Message == "" || (c.field != "" && len(body.Errors[c.field]) == 0) {
			t.Errorf("%s %s: got %s, want %d %s", c.method, c.path, resp, c.status, c.field)
		}
	}
}

// Every route with a path id, given one PostgreSQL cannot hold as text, answers 404 with a
// message, whatever the route does with the id.
func TestUnstorableIdsAreNotFoundOnEveryRoute(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	checked := 0
	for _, r := range apiserver.RouteRules(apiserver.New(apiserver.Config{Clock: clock.RealClock{}, Log: logr.Discard()}, h.store)) {
		if !r.Protected || !pathParam.MatchString(r.Path) {
			continue
		}
		for _, id := range []string{"%00", "ab%FF", "%C3"} {
			path := pathParam.ReplaceAllString(r.Path, id)
			resp := h.api.Do(t, tenant.OwnerKey, r.Method, path, map[string]any{})
			if resp.Status != 404 || resp.Map(t)["message"] == "" {
				t.Errorf("%s %s: got %s, want 404 with a message", r.Method, path, resp)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d routes with path ids found", checked)
	}
}

// A method a path does not have is 405 {message} with Allow naming the ones it has.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	h := newHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	resp := h.api.DoUnchecked(t, tenant.OwnerKey, "DELETE", "/v1/calls", nil) // no such operation to check against
	if resp.Status != 405 || resp.Map(t)["message"] == "" || resp.Header.Get("Allow") != "GET" {
		t.Errorf("DELETE /v1/calls: got %s, Allow %q; want 405 with a message and Allow: GET", resp, resp.Header.Get("Allow"))
	}
}
