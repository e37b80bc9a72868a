package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibTask(t *testing.T, st *store.Store, in store.NewTask) store.Task {
	t.Helper()
	task, err := st.CreateTask(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTasksListAndFilters(t *testing.T) {
	h, _ := ibHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	num := ibNumber(t, h.store, tenant.Account.ID, "+442079460001", "Main")
	callStarted := ibNow.Add(-26 * time.Hour)
	callID, callPID := ibCall(t, h.store, tenant.Account.ID, &num.ID, "+447700900001", "+442079460001", callStarted)

	older := ibTask(t, h.store, store.NewTask{AccountID: tenant.Account.ID, CallID: &callID, Text: "Call Mrs Patel back about the boiler",
		CallbackE164: ibStr("+447700900001"), Sentiment: ibStr("negative"), Urgency: ibStr("high"),
		SummarySnippet: ibStr("Boiler leaking since Sunday"), CreatedAt: ibNow.Add(-25 * time.Hour)})
	newer := ibTask(t, h.store, store.NewTask{AccountID: tenant.Account.ID, Text: "Send the quote", CreatedAt: ibNow.Add(-time.Hour)})
	done := ibTask(t, h.store, store.NewTask{AccountID: tenant.Account.ID, Text: "Already done", CreatedAt: ibNow.Add(-2 * time.Hour)})
	if _, err := h.store.SetTaskStatus(ctx, tenant.Account.ID, done.PublicID, "done", tenant.Owner.ID, ibNow.Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ibTask(t, h.store, store.NewTask{AccountID: other.Account.ID, Text: "Not yours", CreatedAt: ibNow})

	// Default: open ones, newest first.
	page := ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks")
	ibWantIDs(t, "open tasks", page.ids("public_id"), newer.PublicID, older.PublicID)
	ibWantEnvelope(t, h, page, "/v1/tasks", 1, 1, 25, 2, "", "")
	ibWantFields(t, "task with call", page.Data[1], map[string]any{
		"public_id": older.PublicID, "text": "Call Mrs Patel back about the boiler", "status": "open",
		"callback_e164": "+447700900001", "sentiment": "negative", "urgency": "high",
		"summary_snippet": "Boiler leaking since Sunday", "created_at": ibNow.Add(-25 * time.Hour),
		"updated_at": ibNow.Add(-25 * time.Hour), "completed_at": nil, "done_by": nil,
		"call": map[string]any{"public_id": callPID, "from_e164": "+447700900001", "to_e164": "+442079460001",
			"number_label": "Main", "started_at": callStarted},
	})
	ibWantFields(t, "task without call", page.Data[0], map[string]any{
		"public_id": newer.PublicID, "text": "Send the quote", "status": "open", "callback_e164": nil, "sentiment": nil,
		"urgency": nil, "summary_snippet": nil, "created_at": ibNow.Add(-time.Hour), "updated_at": ibNow.Add(-time.Hour),
		"completed_at": nil, "done_by": nil, "call": nil,
	})

	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=open")
	ibWantIDs(t, "status=open", page.ids("public_id"), newer.PublicID, older.PublicID)
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=done")
	ibWantIDs(t, "status=done", page.ids("public_id"), done.PublicID)
	ibWantFields(t, "done task", page.Data[0], map[string]any{
		"public_id": done.PublicID, "text": "Already done", "status": "done", "callback_e164": nil, "sentiment": nil,
		"urgency": nil, "summary_snippet": nil, "created_at": ibNow.Add(-2 * time.Hour), "updated_at": ibNow.Add(-30 * time.Minute),
		"completed_at": ibNow.Add(-30 * time.Minute), "call": nil,
		"done_by": map[string]any{"public_id": tenant.Owner.PublicID, "name": tenant.Owner.Name},
	})
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=all")
	ibWantIDs(t, "status=all", page.ids("public_id"), newer.PublicID, done.PublicID, older.PublicID)

	// Paging keeps the filter in the links.
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=all&per_page=2")
	ibWantIDs(t, "all page 1", page.ids("public_id"), newer.PublicID, done.PublicID)
	ibWantEnvelope(t, h, page, "/v1/tasks", 1, 2, 2, 3, "status=all&per_page=2&page=2", "")
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=all&per_page=2&page=2")
	ibWantIDs(t, "all page 2", page.ids("public_id"), older.PublicID)
	ibWantEnvelope(t, h, page, "/v1/tasks", 2, 2, 2, 3, "", "status=all&per_page=2&page=1")

	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/tasks?status=closed", nil, "status")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/tasks?per_page=101", nil, "per_page")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/tasks?per_page=-1", nil, "per_page")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/tasks?page=0", nil, "page")
}

func TestTasksPatchOpenDoneOpen(t *testing.T) {
	h, clock := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	member := tenant.NewMember(t, h.store, true, false)
	memberKey := apitest.NewKey(t, h.store, member.ID, "inbox:write")
	readOnly := apitest.NewKey(t, h.store, member.ID, "read")
	created := ibNow.Add(-time.Hour)
	task := ibTask(t, h.store, store.NewTask{AccountID: tenant.Account.ID, Text: "Ring the supplier", CreatedAt: created})
	foreign := ibTask(t, h.store, store.NewTask{AccountID: other.Account.ID, Text: "Not yours"})
	path := "/v1/tasks/" + task.PublicID

	// open -> done: the key's user did it, now.
	got := ibWantStatus(t, h, memberKey, "PATCH", path, map[string]any{"status": "done"}, 200)
	ibWantFields(t, "done", got, map[string]any{
		"public_id": task.PublicID, "text": "Ring the supplier", "status": "done", "callback_e164": nil, "sentiment": nil,
		"urgency": nil, "summary_snippet": nil, "created_at": created, "updated_at": ibNow, "completed_at": ibNow,
		"done_by": map[string]any{"public_id": member.PublicID, "name": member.Name}, "call": nil,
	})
	page := ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks?status=done")
	ibWantIDs(t, "done after PATCH", page.ids("public_id"), task.PublicID)

	// Ticking it off again changes nothing: the first person stays recorded.
	clock.Step(10 * time.Minute)
	got = ibWantStatus(t, h, tenant.OwnerKey, "PATCH", path, map[string]any{"status": "done"}, 200)
	ibWantFields(t, "done again", got, map[string]any{
		"public_id": task.PublicID, "text": "Ring the supplier", "status": "done", "callback_e164": nil, "sentiment": nil,
		"urgency": nil, "summary_snippet": nil, "created_at": created, "updated_at": ibNow, "completed_at": ibNow,
		"done_by": map[string]any{"public_id": member.PublicID, "name": member.Name}, "call": nil,
	})

	// done -> open: both cleared.
	clock.Step(5 * time.Minute)
	got = ibWantStatus(t, h, memberKey, "PATCH", path, map[string]any{"status": "open"}, 200)
	ibWantFields(t, "reopened", got, map[string]any{
		"public_id": task.PublicID, "text": "Ring the supplier", "status": "open", "callback_e164": nil, "sentiment": nil,
		"urgency": nil, "summary_snippet": nil, "created_at": created, "updated_at": ibNow.Add(15 * time.Minute),
		"completed_at": nil, "done_by": nil, "call": nil,
	})
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks")
	ibWantIDs(t, "open after reopening", page.ids("public_id"), task.PublicID)

	// Bad bodies.
	ibWant422(t, h, memberKey, "PATCH", path, map[string]any{"status": "closed"}, "status")
	ibWant422(t, h, memberKey, "PATCH", path, map[string]any{}, "status")
	ibWant422(t, h, memberKey, "PATCH", path, map[string]any{"status": nil}, "status")
	ibWant422(t, h, memberKey, "PATCH", path, map[string]any{"status": 1}, "status")
	// A body that is JSON but not an object is a 422 of the spec's shape, naming the body.
	ibWant422(t, h, memberKey, "PATCH", path, "[]", "body")
	ibWant422(t, h, memberKey, "PATCH", path, `"done"`, "body")
	ibWantStatus(t, h, memberKey, "PATCH", path, "{not json", 400)

	// Unknown and other accounts' to-dos.
	ibWantStatus(t, h, memberKey, "PATCH", "/v1/tasks/"+foreign.PublicID, map[string]any{"status": "done"}, 404)
	ibWantStatus(t, h, memberKey, "PATCH", "/v1/tasks/task_unknown", map[string]any{"status": "done"}, 404)
	page = ibGetPage(t, h, other.OwnerKey, "/v1/tasks")
	ibWantIDs(t, "foreign task untouched", page.ids("public_id"), foreign.PublicID)

	// A key without inbox:write may read but not tick off.
	resp := h.api.Do(t, readOnly, "PATCH", path, map[string]any{"status": "done"})
	if resp.Status != 403 || resp.Map(t)["message"] == "" {
		t.Errorf("read-only key: %s, want 403", resp)
	}
	ibGetPage(t, h, readOnly, "/v1/tasks")
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/tasks")
	if page.Data[0]["status"] != "open" {
		t.Errorf("a refused PATCH changed the to-do: %v", page.Data[0])
	}
}

// To-dos need Integrations: listing and ticking off are refused on Team without the add-on,
// and the refused PATCH changes nothing.
func TestTasksAddonGate(t *testing.T) {
	h, _ := ibHarness(t)
	team := apitest.NewTenant(t, h.store, plans.Team)
	task := ibTask(t, h.store, store.NewTask{AccountID: team.Account.ID, Text: "Ring back"})
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", "/v1/tasks", nil)
	ibWantAddonRefused(t, h, team.OwnerKey, "PATCH", "/v1/tasks/"+task.PublicID, map[string]any{"status": "done"})
	got, err := h.store.GetTask(context.Background(), team.Account.ID, task.PublicID)
	if err != nil || got.Status != "open" || got.DoneBy != nil {
		t.Errorf("refused PATCH changed the to-do: %+v %v", got, err)
	}

	// With the add-on bought, the same account may.
	withAddon := apitest.NewTenant(t, h.store, plans.Team, plans.AddonIntegrations)
	task = ibTask(t, h.store, store.NewTask{AccountID: withAddon.Account.ID, Text: "Ring back"})
	resp := ibWantStatus(t, h, withAddon.OwnerKey, "PATCH", "/v1/tasks/"+task.PublicID, map[string]any{"status": "done"}, 200)
	if resp["status"] != "done" {
		t.Errorf("PATCH with the add-on: %v", resp)
	}
	ibWantIDs(t, "page past the end", ibGetPage(t, h, withAddon.OwnerKey, "/v1/tasks?status=all&page=2").ids("public_id"))
}
