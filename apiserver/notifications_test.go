package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibNotification(t *testing.T, st *store.Store, accountID, userID int64, title string, createdAt time.Time) store.Notification {
	t.Helper()
	n, err := st.CreateNotification(context.Background(), store.NewNotification{AccountID: accountID, UserID: userID,
		Type: "voicemail", Title: title, Body: "Body of " + title, URL: "https://app.example/" + title, CreatedAt: createdAt})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ibNotifications is an account whose owner has three notifications (the oldest already read),
// a member with one, and another account with one.
type ibNotifications struct {
	h                *harness
	tenant, other    apitest.Tenant
	member           store.User
	memberKey        string
	old, mid, newest store.Notification
	memberN, foreign store.Notification
}

func ibNotificationsFixture(t *testing.T, h *harness) ibNotifications {
	t.Helper()
	f := ibNotifications{h: h}
	f.tenant = apitest.NewTenant(t, h.store, plans.Business)
	f.other = apitest.NewTenant(t, h.store, plans.Business)
	f.member = f.tenant.NewMember(t, h.store, true, false)
	f.memberKey = apitest.NewKey(t, h.store, f.member.ID, "inbox:write")
	acct := f.tenant.Account.ID
	f.old = ibNotification(t, h.store, acct, f.tenant.Owner.ID, "old", ibNow.Add(-72*time.Hour))
	f.mid = ibNotification(t, h.store, acct, f.tenant.Owner.ID, "mid", ibNow.Add(-2*time.Hour))
	f.newest = ibNotification(t, h.store, acct, f.tenant.Owner.ID, "newest", ibNow.Add(-time.Minute))
	f.memberN = ibNotification(t, h.store, acct, f.member.ID, "member", ibNow.Add(-time.Second))
	f.foreign = ibNotification(t, h.store, f.other.Account.ID, f.other.Owner.ID, "foreign", ibNow)
	if _, _, err := h.store.MarkNotificationRead(context.Background(), acct, f.tenant.Owner.ID, f.old.ID, ibNow.Add(-48*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// unread lists a key's notifications and returns its unread_count and read flag of each id.
func (f ibNotifications) state(t *testing.T, key string) (int, map[string]bool) {
	t.Helper()
	page := ibGetPage(t, f.h, key, "/v1/notifications?per_page=100")
	read := map[string]bool{}
	for _, row := range page.Data {
		read[row["id"].(string)] = row["read"].(bool)
	}
	if page.UnreadCount == nil {
		t.Fatalf("no unread_count")
	}
	return *page.UnreadCount, read
}

func ibWantUnreadCount(t *testing.T, p rawPage, want int) {
	t.Helper()
	if p.UnreadCount == nil || *p.UnreadCount != want {
		t.Errorf("unread_count = %v, want %d", p.UnreadCount, want)
	}
}

func TestNotificationsList(t *testing.T) {
	h, _ := ibHarness(t)
	f := ibNotificationsFixture(t, h)
	key := f.tenant.OwnerKey

	// The key's user's own, newest first, with exact fields.
	page := ibGetPage(t, h, key, "/v1/notifications")
	ibWantIDs(t, "notifications", page.ids("id"), f.newest.ID, f.mid.ID, f.old.ID)
	ibWantEnvelope(t, h, page, "/v1/notifications", 1, 1, 25, 3, "", "")
	ibWantUnreadCount(t, page, 2)
	ibWantFields(t, "newest", page.Data[0], map[string]any{
		"id": f.newest.ID, "type": "voicemail", "title": "newest", "body": "Body of newest", "url": "https://app.example/newest",
		"read": false, "created_at": ibNow.Add(-time.Minute), "read_at": nil,
	})
	ibWantFields(t, "old (read)", page.Data[2], map[string]any{
		"id": f.old.ID, "type": "voicemail", "title": "old", "body": "Body of old", "url": "https://app.example/old",
		"read": true, "created_at": ibNow.Add(-72 * time.Hour), "read_at": ibNow.Add(-48 * time.Hour),
	})

	// unread filter: 1 = unread only; 0 = all. unread_count is the user's unread total either way.
	page = ibGetPage(t, h, key, "/v1/notifications?unread=1")
	ibWantIDs(t, "unread=1", page.ids("id"), f.newest.ID, f.mid.ID)
	ibWantEnvelope(t, h, page, "/v1/notifications", 1, 1, 25, 2, "", "")
	ibWantUnreadCount(t, page, 2)
	page = ibGetPage(t, h, key, "/v1/notifications?unread=0")
	ibWantIDs(t, "unread=0", page.ids("id"), f.newest.ID, f.mid.ID, f.old.ID)

	// Paging keeps the filter in the links; past the end is an empty page, not an error.
	page = ibGetPage(t, h, key, "/v1/notifications?per_page=2")
	ibWantIDs(t, "page 1", page.ids("id"), f.newest.ID, f.mid.ID)
	ibWantEnvelope(t, h, page, "/v1/notifications", 1, 2, 2, 3, "per_page=2&page=2", "")
	page = ibGetPage(t, h, key, "/v1/notifications?per_page=2&page=2")
	ibWantIDs(t, "page 2", page.ids("id"), f.old.ID)
	ibWantEnvelope(t, h, page, "/v1/notifications", 2, 2, 2, 3, "", "per_page=2&page=1")
	page = ibGetPage(t, h, key, "/v1/notifications?unread=1&per_page=1&page=2")
	ibWantIDs(t, "unread page 2", page.ids("id"), f.mid.ID)
	ibWantEnvelope(t, h, page, "/v1/notifications", 2, 2, 1, 2, "", "unread=1&per_page=1&page=1")
	page = ibGetPage(t, h, key, "/v1/notifications?per_page=2&page=7")
	ibWantIDs(t, "past the end", page.ids("id"))
	ibWantEnvelope(t, h, page, "/v1/notifications", 7, 2, 2, 3, "", "per_page=2&page=2")
	ibWantUnreadCount(t, page, 2)
	// A page so far out that page*per_page overflows is still just past the end.
	page = ibGetPage(t, h, key, "/v1/notifications?per_page=100&page=922337203685477581")
	ibWantIDs(t, "far past the end", page.ids("id"))
	page = ibGetPage(t, h, key, "/v1/notifications?per_page=100")
	if page.PerPage != 100 || len(page.Data) != 3 {
		t.Errorf("per_page=100: per_page %d, %d rows", page.PerPage, len(page.Data))
	}

	// Another user of the same account, and another account, see only their own.
	page = ibGetPage(t, h, f.memberKey, "/v1/notifications")
	ibWantIDs(t, "member's notifications", page.ids("id"), f.memberN.ID)
	ibWantUnreadCount(t, page, 1)
	page = ibGetPage(t, h, f.other.OwnerKey, "/v1/notifications")
	ibWantIDs(t, "other account's notifications", page.ids("id"), f.foreign.ID)
	ibWantUnreadCount(t, page, 1)

	// Reading needs only read.
	readOnly := apitest.NewKey(t, h.store, f.tenant.Owner.ID)
	page = ibGetPage(t, h, readOnly, "/v1/notifications")
	ibWantIDs(t, "read-only key", page.ids("id"), f.newest.ID, f.mid.ID, f.old.ID)

	// A user without notifications gets an empty page.
	lonely := f.tenant.NewMember(t, h.store, true, false)
	page = ibGetPage(t, h, apitest.NewKey(t, h.store, lonely.ID), "/v1/notifications")
	ibWantIDs(t, "no notifications", page.ids("id"))
	ibWantEnvelope(t, h, page, "/v1/notifications", 1, 1, 25, 0, "", "")
	ibWantUnreadCount(t, page, 0)

	for _, q := range []struct{ query, field string }{
		{"unread=2", "unread"}, {"unread=true", "unread"}, {"per_page=101", "per_page"}, {"per_page=0", "per_page"},
		{"per_page=x", "per_page"}, {"page=0", "page"}, {"page=-3", "page"}, {"page=1.5", "page"},
	} {
		ibWant422(t, h, key, "GET", "/v1/notifications?"+q.query, nil, q.field)
	}

	team := apitest.NewTenant(t, h.store, plans.Team)
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", "/v1/notifications", nil)
}

func TestNotificationMarkRead(t *testing.T) {
	h, clock := ibHarness(t)
	f := ibNotificationsFixture(t, h)
	key := apitest.NewKey(t, h.store, f.tenant.Owner.ID, "inbox:write")
	path := "/v1/notifications/" + f.mid.ID + "/read"

	got := ibWantStatus(t, h, key, "POST", path, nil, 200)
	ibWantFields(t, "read", got, map[string]any{"id": f.mid.ID, "read": true, "unread_count": 1})
	page := ibGetPage(t, h, key, "/v1/notifications")
	ibWantUnreadCount(t, page, 1)
	ibWantFields(t, "mid after read", page.Data[1], map[string]any{
		"id": f.mid.ID, "type": "voicemail", "title": "mid", "body": "Body of mid", "url": "https://app.example/mid",
		"read": true, "created_at": ibNow.Add(-2 * time.Hour), "read_at": ibNow,
	})
	ibWantIDs(t, "unread after read", ibGetPage(t, h, key, "/v1/notifications?unread=1").ids("id"), f.newest.ID)

	// Reading it again is fine and keeps the first read_at; an already read one likewise.
	clock.Step(time.Hour)
	got = ibWantStatus(t, h, key, "POST", path, nil, 200)
	ibWantFields(t, "read again", got, map[string]any{"id": f.mid.ID, "read": true, "unread_count": 1})
	got = ibWantStatus(t, h, key, "POST", "/v1/notifications/"+f.old.ID+"/read", nil, 200)
	ibWantFields(t, "old read", got, map[string]any{"id": f.old.ID, "read": true, "unread_count": 1})
	page = ibGetPage(t, h, key, "/v1/notifications")
	if !ibTime(t, page.Data[1]["read_at"]).Equal(ibNow) || !ibTime(t, page.Data[2]["read_at"]).Equal(ibNow.Add(-48*time.Hour)) {
		t.Errorf("read_at changed on a second read: %v, %v", page.Data[1]["read_at"], page.Data[2]["read_at"])
	}

	// The id is a UUID: upper case is the same notification, and the answer gives it as listed.
	got = ibWantStatus(t, h, key, "POST", "/v1/notifications/"+strings.ToUpper(f.newest.ID)+"/read", map[string]any{}, 200)
	ibWantFields(t, "read by upper-case id", got, map[string]any{"id": f.newest.ID, "read": true, "unread_count": 0})

	// Another user's, another account's, unknown and non-UUID ids: 404, and nothing is marked read.
	for _, id := range []string{f.memberN.ID, f.foreign.ID, "7f1f5f0e-5b7e-4c59-9d0e-1f0c6c1d2a3b", "not-a-uuid"} {
		resp := h.api.Do(t, key, "POST", "/v1/notifications/"+id+"/read", nil)
		if resp.Status != 404 || resp.Map(t)["message"] != "No such notification on this account." {
			t.Errorf("POST read %s: %s, want 404", id, resp)
		}
	}
	if unread, read := f.state(t, f.memberKey); unread != 1 || read[f.memberN.ID] {
		t.Errorf("member's notification: unread_count %d, read %v; another user's read marked it", unread, read[f.memberN.ID])
	}
	if unread, read := f.state(t, f.other.OwnerKey); unread != 1 || read[f.foreign.ID] {
		t.Errorf("other account's notification: unread_count %d, read %v", unread, read[f.foreign.ID])
	}

	// The member marks their own: their count goes down, the owner's is untouched.
	got = ibWantStatus(t, h, f.memberKey, "POST", "/v1/notifications/"+f.memberN.ID+"/read", nil, 200)
	ibWantFields(t, "member read", got, map[string]any{"id": f.memberN.ID, "read": true, "unread_count": 0})

	// Bodies: none is wanted; JSON is ignored, anything else refused with 4xx.
	fresh := ibNotification(t, h.store, f.tenant.Account.ID, f.tenant.Owner.ID, "fresh", ibNow)
	freshPath := "/v1/notifications/" + fresh.ID + "/read"
	for _, body := range []any{"{not json", `{"a":`, []byte{0xff, 0xfe}} {
		ibWantStatus(t, h, key, "POST", freshPath, body, 400)
	}
	req, _ := http.NewRequest("POST", h.api.BaseURL+freshPath, strings.NewReader("read=1"))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := h.api.HTTP.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("form body: %v %v, want 415", resp, err)
	} else {
		resp.Body.Close()
	}
	if unread, read := f.state(t, key); unread != 1 || read[fresh.ID] {
		t.Errorf("refused bodies marked it read: unread_count %d", unread)
	}

	// Without inbox:write: 403 naming it, and not marked read.
	readOnly := apitest.NewKey(t, h.store, f.tenant.Owner.ID, "contacts:write", "transcribe", "webhooks:manage")
	ibWantPermissionRefused(t, h, readOnly, "POST", freshPath, nil, "inbox:write")
	if unread, read := f.state(t, key); unread != 1 || read[fresh.ID] {
		t.Errorf("a refused read marked it read: unread_count %d", unread)
	}

	// Without Integrations: refused, not marked read.
	team := apitest.NewTenant(t, h.store, plans.Team)
	teamN := ibNotification(t, h.store, team.Account.ID, team.Owner.ID, "team", ibNow)
	ibWantAddonRefused(t, h, team.OwnerKey, "POST", "/v1/notifications/"+teamN.ID+"/read", nil)
	unread, err := h.store.UnreadNotifications(context.Background(), team.Account.ID, team.Owner.ID)
	if err != nil || unread != 1 {
		t.Errorf("refused by the gate but marked read: unread %d, %v", unread, err)
	}
}

func TestNotificationsReadAll(t *testing.T) {
	h, clock := ibHarness(t)
	f := ibNotificationsFixture(t, h)
	key := apitest.NewKey(t, h.store, f.tenant.Owner.ID, "inbox:write")
	clock.Step(5 * time.Minute)

	// Refusals first: nothing changes.
	ibWantStatus(t, h, key, "POST", "/v1/notifications/read-all", "{oops", 400)
	ibWantPermissionRefused(t, h, apitest.NewKey(t, h.store, f.tenant.Owner.ID, "contacts:read"), "POST", "/v1/notifications/read-all", nil, "inbox:write")
	if unread, _ := f.state(t, key); unread != 2 {
		t.Fatalf("refused read-all changed unread_count to %d", unread)
	}

	got := ibWantStatus(t, h, key, "POST", "/v1/notifications/read-all", nil, 200)
	ibWantFields(t, "read-all", got, map[string]any{"unread_count": 0})
	page := ibGetPage(t, h, key, "/v1/notifications")
	ibWantUnreadCount(t, page, 0)
	for i, want := range []time.Time{ibNow.Add(5 * time.Minute), ibNow.Add(5 * time.Minute), ibNow.Add(-48 * time.Hour)} {
		if page.Data[i]["read"] != true || !ibTime(t, page.Data[i]["read_at"]).Equal(want) {
			t.Errorf("after read-all, %v: read %v read_at %v, want %s", page.Data[i]["title"], page.Data[i]["read"], page.Data[i]["read_at"], want)
		}
	}
	ibWantIDs(t, "unread after read-all", ibGetPage(t, h, key, "/v1/notifications?unread=1").ids("id"))

	// Only the key's user's: the member's and the other account's stay unread.
	if unread, read := f.state(t, f.memberKey); unread != 1 || read[f.memberN.ID] {
		t.Errorf("member after owner's read-all: unread_count %d", unread)
	}
	if unread, _ := f.state(t, f.other.OwnerKey); unread != 1 {
		t.Errorf("other account after read-all: unread_count %d", unread)
	}

	// Again, with {} as body: nothing left.
	got = ibWantStatus(t, h, key, "POST", "/v1/notifications/read-all", map[string]any{}, 200)
	ibWantFields(t, "read-all again", got, map[string]any{"unread_count": 0})

	// A notification arriving later is unread again.
	ibNotification(t, h.store, f.tenant.Account.ID, f.tenant.Owner.ID, "later", ibNow.Add(time.Hour))
	if unread, _ := f.state(t, key); unread != 1 {
		t.Errorf("new notification after read-all: unread_count %d, want 1", unread)
	}

	team := apitest.NewTenant(t, h.store, plans.Team)
	ibNotification(t, h.store, team.Account.ID, team.Owner.ID, "team", ibNow)
	ibWantAddonRefused(t, h, team.OwnerKey, "POST", "/v1/notifications/read-all", nil)
	if unread, _ := h.store.UnreadNotifications(context.Background(), team.Account.ID, team.Owner.ID); unread != 1 {
		t.Errorf("refused by the gate but marked read")
	}
}
