package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibSMS(t *testing.T, st *store.Store, in store.NewSMSMessage) store.SMSMessage {
	t.Helper()
	m, err := st.AddSMSMessage(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSMSConversationsAndMessages(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	main := ibNumber(t, h.store, tenant.Account.ID, "+442079460001", "Main")
	sales := ibNumber(t, h.store, tenant.Account.ID, "+442079460002", "Sales")
	foreignNum := ibNumber(t, h.store, other.Account.ID, "+442079460099", "")

	t1 := ibNow.Add(-4 * time.Hour)
	// Thread with Alice on Main: in, out, in (the last is the newest message of the thread).
	a1 := ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: main.ID, CounterpartyE164: "+447700900001",
		Direction: "inbound", Body: "Hello, is the shop open?", ReceivedAt: t1})
	ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: main.ID, CounterpartyE164: "+447700900001",
		Direction: "outbound", Body: "Yes, until 6.", ReceivedAt: t1.Add(time.Minute)})
	ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: main.ID, CounterpartyE164: "+447700900001",
		Direction: "inbound", Body: strings.Repeat("x", 150), Segments: 2, ReceivedAt: t1.Add(2 * time.Hour)})
	// Thread with Bob on Sales: older.
	b1 := ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: sales.ID, CounterpartyE164: "+447700900002",
		Direction: "inbound", Body: "Quote please", ReceivedAt: t1.Add(time.Hour)})
	// Thread with Carol on Main: the most recent.
	c1 := ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: main.ID, CounterpartyE164: "+447700900003",
		Direction: "outbound", Body: "Your engineer is on the way.", ReceivedAt: t1.Add(3 * time.Hour)})
	foreign := ibSMS(t, h.store, store.NewSMSMessage{AccountID: other.Account.ID, NumberID: foreignNum.ID, CounterpartyE164: "+447700900004",
		Direction: "inbound", Body: "Not yours", ReceivedAt: ibNow})

	// Threads, most recent first, with exact fields.
	page := ibGetPage(t, h, tenant.OwnerKey, "/v1/sms/conversations")
	ibWantIDs(t, "threads", page.ids("public_id"), c1.ConversationPublicID, a1.ConversationPublicID, b1.ConversationPublicID)
	ibWantEnvelope(t, h, page, "/v1/sms/conversations", 1, 1, 25, 3, "", "")
	ibWantFields(t, "alice thread", page.Data[1], map[string]any{
		"public_id": a1.ConversationPublicID, "counterparty_e164": "+447700900001", "number_e164": "+442079460001",
		"number_label": "Main", "last_message_preview": strings.Repeat("x", 100), "last_message_at": t1.Add(2 * time.Hour),
		"unread_count": 2,
	})
	ibWantFields(t, "carol thread", page.Data[0], map[string]any{
		"public_id": c1.ConversationPublicID, "counterparty_e164": "+447700900003", "number_e164": "+442079460001",
		"number_label": "Main", "last_message_preview": "Your engineer is on the way.", "last_message_at": t1.Add(3 * time.Hour),
		"unread_count": 0,
	})

	// Paging of threads.
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/sms/conversations?per_page=2")
	ibWantIDs(t, "threads page 1", page.ids("public_id"), c1.ConversationPublicID, a1.ConversationPublicID)
	ibWantEnvelope(t, h, page, "/v1/sms/conversations", 1, 2, 2, 3, "page=2&per_page=2", "")
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/sms/conversations?per_page=2&page=2")
	ibWantIDs(t, "threads page 2", page.ids("public_id"), b1.ConversationPublicID)
	ibWantEnvelope(t, h, page, "/v1/sms/conversations", 2, 2, 2, 3, "", "page=1&per_page=2")
	page = ibGetPage(t, h, tenant.OwnerKey, "/v1/sms/conversations?per_page=100&page=9")
	ibWantIDs(t, "threads past the end", page.ids("public_id"))

	// Messages of Alice's thread, oldest first, with the thread.
	path := "/v1/sms/conversations/" + a1.ConversationPublicID + "/messages"
	page = ibGetPage(t, h, tenant.OwnerKey, path)
	ibWantEnvelope(t, h, page, path, 1, 1, 100, 3, "", "")
	if len(page.Data) != 3 {
		t.Fatalf("messages = %v", page.Data)
	}
	ibWantFields(t, "first message", page.Data[0], map[string]any{
		"conversation_public_id": a1.ConversationPublicID, "direction": "inbound", "from_e164": "+447700900001",
		"to_e164": "+442079460001", "body": "Hello, is the shop open?", "status": "received", "segments": 1, "received_at": t1,
	})
	ibWantFields(t, "second message", page.Data[1], map[string]any{
		"conversation_public_id": a1.ConversationPublicID, "direction": "outbound", "from_e164": "+442079460001",
		"to_e164": "+447700900001", "body": "Yes, until 6.", "status": "sent", "segments": 1, "received_at": t1.Add(time.Minute),
	})
	if page.Data[2]["segments"] != float64(2) {
		t.Errorf("third message = %v", page.Data[2])
	}
	if page.Conversation["public_id"] != a1.ConversationPublicID || page.Conversation["number_label"] != "Main" ||
		page.Conversation["unread_count"] != float64(2) {
		t.Errorf("conversation = %v", page.Conversation)
	}
	page = ibGetPage(t, h, tenant.OwnerKey, path+"?per_page=2&page=2")
	ibWantEnvelope(t, h, page, path, 2, 2, 2, 3, "", "page=1&per_page=2")
	if len(page.Data) != 1 || page.Data[0]["body"] != strings.Repeat("x", 150) || page.Conversation["public_id"] != a1.ConversationPublicID {
		t.Errorf("messages page 2 = %+v", page)
	}
	page = ibGetPage(t, h, tenant.OwnerKey, path+"?per_page=200")
	if page.PerPage != 200 || len(page.Data) != 3 {
		t.Errorf("per_page=200: %+v", page)
	}

	// Validation.
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations?per_page=101", nil, "per_page")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations?per_page=0", nil, "per_page")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations?page=0", nil, "page")
	ibWant422(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations?page=two", nil, "page")
	ibWant422(t, h, tenant.OwnerKey, "GET", path+"?per_page=201", nil, "per_page")

	// Another account's thread, and an unknown one, are not there; nor are its threads listed.
	for _, id := range []string{foreign.ConversationPublicID, "conv_unknown"} {
		ibWantStatus(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations/"+id+"/messages", nil, 404)
	}
	page = ibGetPage(t, h, other.OwnerKey, "/v1/sms/conversations")
	ibWantIDs(t, "other account's threads", page.ids("public_id"), foreign.ConversationPublicID)
}

// Text threads need Integrations; paging of a thread's messages is validated and a page past
// the end is empty; another account's thread stays 404 whatever the query.
func TestSMSGateAndMessagePaging(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	team := apitest.NewTenant(t, h.store, plans.Team)
	num := ibNumber(t, h.store, tenant.Account.ID, "+442079460001", "Main")
	teamNum := ibNumber(t, h.store, team.Account.ID, "+442079460002", "Team")
	m := ibSMS(t, h.store, store.NewSMSMessage{AccountID: tenant.Account.ID, NumberID: num.ID, CounterpartyE164: "+447700900001",
		Direction: "inbound", Body: "Hi", ReceivedAt: ibNow})
	tm := ibSMS(t, h.store, store.NewSMSMessage{AccountID: team.Account.ID, NumberID: teamNum.ID, CounterpartyE164: "+447700900001",
		Direction: "inbound", Body: "Hi", ReceivedAt: ibNow})

	ibWantAddonRefused(t, h, team.OwnerKey, "GET", "/v1/sms/conversations", nil)
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", "/v1/sms/conversations/"+tm.ConversationPublicID+"/messages", nil)

	path := "/v1/sms/conversations/" + m.ConversationPublicID + "/messages"
	page := ibGetPage(t, h, apitest.NewKey(t, h.store, tenant.Owner.ID), path+"?page=3&per_page=1")
	ibWantIDs(t, "messages past the end", page.ids("body"))
	ibWantEnvelope(t, h, page, path, 3, 1, 1, 1, "", "per_page=1&page=1")
	if page.Conversation["public_id"] != m.ConversationPublicID {
		t.Errorf("conversation on an empty page = %v", page.Conversation)
	}
	for _, q := range []struct{ query, field string }{{"per_page=0", "per_page"}, {"page=0", "page"}, {"per_page=x", "per_page"}} {
		ibWant422(t, h, tenant.OwnerKey, "GET", path+"?"+q.query, nil, q.field)
	}
	ibWantStatus(t, h, tenant.OwnerKey, "GET", "/v1/sms/conversations/"+tm.ConversationPublicID+"/messages?page=2", nil, 404)
}
