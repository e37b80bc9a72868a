package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

func ibSlip(t *testing.T, st *store.Store, in store.NewMessageSlip) store.MessageSlip {
	t.Helper()
	s, err := st.CreateMessageSlip(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReceptionMessagesList(t *testing.T) {
	h, _ := ibHarness(t, func(c *apiserver.Config) { c.Media.SigningKey = []byte("reception test key") })
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	num := ibNumber(t, h.store, acct, "+442079460001", "Main")
	key := tenant.OwnerKey

	// ibNow is Monday 10 March 2025 12:00 UTC, 12:00 in London (GMT).
	today := ibSlip(t, h.store, store.NewMessageSlip{AccountID: acct, NumberID: &num.ID, FromE164: "+447700900111",
		Department: "Sales", CallerName: "Ann Archer", ReceivedAt: ibNow.Add(-time.Hour), HeardAt: ptrTime(ibNow.Add(-30 * time.Minute)),
		TranscriptStatus: "completed", SummaryStatus: "completed", Sentiment: ibStr("positive"), Urgency: ibStr("low"),
		NameRecording: true, MessageRecording: true})
	// 7 March: within 7d and this month.
	threeDays := ibSlip(t, h.store, store.NewMessageSlip{AccountID: acct, FromE164: "+447700900222", ReceivedAt: ibNow.Add(-72 * time.Hour),
		Sentiment: ibStr("negative"), Urgency: ibStr("high")})
	// 20 February: within 30d, last month.
	february := ibSlip(t, h.store, store.NewMessageSlip{AccountID: acct, FromE164: "+442079460333", Department: "Support",
		ReceivedAt: time.Date(2025, 2, 20, 9, 0, 0, 0, time.UTC), Sentiment: ibStr("neutral"), Urgency: ibStr("normal"),
		MessageRecording: true})
	// 1 December: only in "all".
	december := ibSlip(t, h.store, store.NewMessageSlip{AccountID: acct, FromE164: "+447700900444",
		ReceivedAt: time.Date(2024, 12, 1, 9, 0, 0, 0, time.UTC), HeardAt: ptrTime(time.Date(2024, 12, 2, 9, 0, 0, 0, time.UTC))})
	foreign := ibSlip(t, h.store, store.NewMessageSlip{AccountID: other.Account.ID, FromE164: "+447700900111", ReceivedAt: ibNow})

	const path = "/v1/reception-messages"
	page := ibGetPage(t, h, key, path)
	ibWantIDs(t, "default", page.ids("public_id"), today.PublicID, threeDays.PublicID, february.PublicID, december.PublicID)
	ibWantEnvelope(t, h, page, path, 1, 1, 20, 4, "", "")
	ibWantFields(t, "today's slip", page.Data[0], map[string]any{
		"public_id": today.PublicID, "from_e164": "+447700900111", "department": "Sales", "received_at": ibNow.Add(-time.Hour),
		"heard_at": ibNow.Add(-30 * time.Minute), "name_recording_public_id": *today.NameRecordingPublicID,
		"message_recording_public_id": *today.MessageRecordingPublicID, "transcript_status": "completed",
		"caller_name": "Ann Archer", "summary_status": "completed", "sentiment": "positive", "urgency": "low",
	})
	ibWantFields(t, "bare slip", page.Data[1], map[string]any{
		"public_id": threeDays.PublicID, "from_e164": "+447700900222", "department": "", "received_at": ibNow.Add(-72 * time.Hour),
		"heard_at": nil, "name_recording_public_id": nil, "message_recording_public_id": nil, "transcript_status": "pending",
		"caller_name": "", "summary_status": "pending", "sentiment": "negative", "urgency": "high",
	})
	if today.NameRecordingPublicID == nil || !strings.HasPrefix(*today.NameRecordingPublicID, store.PrefixRecording) ||
		*today.NameRecordingPublicID == *today.MessageRecordingPublicID {
		t.Errorf("recording ids %v %v", today.NameRecordingPublicID, today.MessageRecordingPublicID)
	}
	if page.Data[2]["message_recording_public_id"] != *february.MessageRecordingPublicID || page.Data[2]["name_recording_public_id"] != nil {
		t.Errorf("february's recordings: %v", page.Data[2])
	}
	if page.Data[3]["sentiment"] != nil || page.Data[3]["urgency"] != nil {
		t.Errorf("december without summary: %v", page.Data[3])
	}

	// The slip's recordings play through the recording link operation.
	for _, rec := range []string{*today.NameRecordingPublicID, *today.MessageRecordingPublicID} {
		got := ibWantStatus(t, h, key, "GET", "/v1/recordings/"+rec+"/stream-url", nil, 200)
		if u, _ := got["url"].(string); !strings.Contains(u, "/"+rec+"?") {
			t.Errorf("stream-url of slip recording %s: %v", rec, got)
		}
		ibWantStatus(t, h, other.OwnerKey, "GET", "/v1/recordings/"+rec+"/stream-url", nil, 404)
	}

	cases := []struct {
		query string
		want  []string
	}{
		// search: part of the caller's number as international digits, with or without + and spaces.
		{"search=900111", []string{today.PublicID}},
		{"search=%2B44+7700+900", []string{today.PublicID, threeDays.PublicID, december.PublicID}},
		{"search=4420794", []string{february.PublicID}},
		{"search=07700900111", nil}, // national form: not rewritten
		{"search=nobody", nil},      // no digits: matches nothing
		// period, in the account's time zone.
		{"period=all", []string{today.PublicID, threeDays.PublicID, february.PublicID, december.PublicID}},
		{"period=today", []string{today.PublicID}},
		{"period=7d", []string{today.PublicID, threeDays.PublicID}},
		{"period=30d", []string{today.PublicID, threeDays.PublicID, february.PublicID}},
		{"period=month", []string{today.PublicID, threeDays.PublicID}},
		{"period=custom&date_from=2025-02-20&date_to=2025-02-20", []string{february.PublicID}},
		{"period=custom&date_from=2025-02-21&date_to=2025-03-06", nil},
		{"date_from=2025-03-07", []string{today.PublicID, threeDays.PublicID}}, // dates alone mean custom
		{"period=custom&date_to=2025-02-28", []string{february.PublicID, december.PublicID}},
		// status, sentiment, urgency.
		{"status=heard", []string{today.PublicID, december.PublicID}},
		{"status=unheard", []string{threeDays.PublicID, february.PublicID}},
		{"sentiment=negative", []string{threeDays.PublicID}},
		{"sentiment=neutral", []string{february.PublicID}},
		{"urgency=low", []string{today.PublicID}},
		{"urgency=normal", []string{february.PublicID}},
		// combined.
		{"status=unheard&period=30d&urgency=high", []string{threeDays.PublicID}},
		{"search=447700&status=heard&period=7d", []string{today.PublicID}},
	}
	for _, c := range cases {
		page := ibGetPage(t, h, key, path+"?"+c.query)
		ibWantIDs(t, c.query, page.ids("public_id"), c.want...)
		if page.Total != len(c.want) {
			t.Errorf("%s: total %d, want %d", c.query, page.Total, len(c.want))
		}
	}

	// Paging keeps the filters in the links; past the end is an empty page.
	page = ibGetPage(t, h, key, path+"?period=all&per_page=3")
	ibWantIDs(t, "page 1", page.ids("public_id"), today.PublicID, threeDays.PublicID, february.PublicID)
	ibWantEnvelope(t, h, page, path, 1, 2, 3, 4, "period=all&per_page=3&page=2", "")
	page = ibGetPage(t, h, key, path+"?period=all&per_page=3&page=2")
	ibWantIDs(t, "page 2", page.ids("public_id"), december.PublicID)
	ibWantEnvelope(t, h, page, path, 2, 2, 3, 4, "", "period=all&per_page=3&page=1")
	page = ibGetPage(t, h, key, path+"?per_page=3&page=5")
	ibWantIDs(t, "past the end", page.ids("public_id"))
	ibWantEnvelope(t, h, page, path, 5, 2, 3, 4, "", "per_page=3&page=2")
	if page := ibGetPage(t, h, key, path+"?per_page=100"); page.PerPage != 100 || len(page.Data) != 4 {
		t.Errorf("per_page=100: %d, %d rows", page.PerPage, len(page.Data))
	}

	// Bad values: 422 naming the field.
	for _, q := range []struct{ query, field string }{
		{"period=yesterday", "period"},
		{"period=custom", "date_from"},
		{"period=custom&date_from=2025-02-30", "date_from"},
		{"date_from=10/03/2025", "date_from"},
		{"period=custom&date_to=tomorrow", "date_to"},
		{"period=custom&date_from=2025-03-02&date_to=2025-03-01", "date_from"},
		{"period=today&date_from=2025-03-01", "period"},
		{"status=read", "status"},
		{"sentiment=angry", "sentiment"},
		{"urgency=urgent", "urgency"},
		{"search=" + strings.Repeat("4", 101), "search"},
		{"per_page=101", "per_page"},
		{"per_page=0", "per_page"},
		{"page=0", "page"},
		{"page=x", "page"},
	} {
		ibWant422(t, h, key, "GET", path+"?"+q.query, nil, q.field)
	}

	// Another account sees only its own; a key with only read is enough; Team without the add-on is refused.
	ibWantIDs(t, "other account", ibGetPage(t, h, other.OwnerKey, path).ids("public_id"), foreign.PublicID)
	ibWantIDs(t, "read-only key", ibGetPage(t, h, apitest.NewKey(t, h.store, tenant.Owner.ID), path+"?search=900111").ids("public_id"), today.PublicID)
	team := apitest.NewTenant(t, h.store, plans.Team)
	ibWantAddonRefused(t, h, team.OwnerKey, "GET", path, nil)
}

// Days are the account's calendar days: 03:00 UTC on 10 March is "today" in London but
// 9 March (23:00) in New York, where ibNow is 08:00 on 10 March.
func TestReceptionMessagesPeriodInAccountTimeZone(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	early := ibSlip(t, h.store, store.NewMessageSlip{AccountID: tenant.Account.ID, FromE164: "+447700900111",
		ReceivedAt: time.Date(2025, 3, 10, 3, 0, 0, 0, time.UTC)})
	ibWantIDs(t, "today in London", ibGetPage(t, h, tenant.OwnerKey, "/v1/reception-messages?period=today").ids("public_id"), early.PublicID)

	tz := "America/New_York"
	if _, err := h.store.UpdateAccount(context.Background(), tenant.Account.ID, store.AccountSettings{TimeZone: &tz}); err != nil {
		t.Fatal(err)
	}
	ibWantIDs(t, "today in New York", ibGetPage(t, h, tenant.OwnerKey, "/v1/reception-messages?period=today").ids("public_id"))
	ibWantIDs(t, "9 March in New York",
		ibGetPage(t, h, tenant.OwnerKey, "/v1/reception-messages?date_from=2025-03-09&date_to=2025-03-09").ids("public_id"), early.PublicID)
}

func ptrTime(t time.Time) *time.Time { return &t }
