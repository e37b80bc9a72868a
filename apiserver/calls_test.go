package apiserver_test

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// callsNow is the fake "now" of the calls and analytics tests: 11:30 in London (BST).
var callsNow = time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC)

// newCallsHarness is a harness on the fake clock with a generous rate limit (the clock does not move).
func newCallsHarness(t *testing.T) *harness {
	t.Helper()
	fake := clocktesting.NewFakeClock(callsNow)
	return newHarness(t, func(c *apiserver.Config) {
		c.Clock = fake
		c.RequestsPerMinute = 100000
	})
}

// testCall is a call to insert; zero fields take the column defaults.
type testCall struct {
	accountID   int64
	numberID    *int64
	from, to    string
	callerName  string
	disposition string
	filtered    bool
	startedAt   time.Time
	forward     int
	pence       int64
}

type insertedCall struct {
	id       int64
	publicID string
}

func insertTestCall(t *testing.T, st *store.Store, c testCall) insertedCall {
	t.Helper()
	if c.disposition == "" {
		c.disposition = "answered"
	}
	if c.to == "" {
		c.to = "+442079460001"
	}
	ic := insertedCall{publicID: store.NewPublicID(store.PrefixCall)}
	err := storetest.SQL(t, st).QueryRow(context.Background(), `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164,
			caller_name, disposition, filtered, started_at, forward_seconds, total_rated_amount_pence)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		c.accountID, ic.publicID, c.numberID, c.from, c.to, c.callerName, c.disposition, c.filtered, c.startedAt,
		c.forward, c.pence).Scan(&ic.id)
	if err != nil {
		t.Fatal(err)
	}
	return ic
}

// insertTestRecording adds a recording of kind to a call and returns its id and public id.
func insertTestRecording(t *testing.T, st *store.Store, accountID, callID int64, kind string, deleted bool) (int64, string) {
	t.Helper()
	pid := store.NewPublicID(store.PrefixRecording)
	var deletedAt *time.Time
	if deleted {
		deletedAt = &callsNow
	}
	var id int64
	err := storetest.SQL(t, st).QueryRow(context.Background(), `INSERT INTO recordings (account_id, public_id, call_id, kind, storage_key, deleted_at)
		VALUES ($1, $2, $3, $4, 'k/'||$2, $5) RETURNING id`, accountID, pid, callID, kind, deletedAt).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id, pid
}

// deleteRecording marks one of the account's recordings deleted, as retention does.
func deleteRecording(t testing.TB, st *store.Store, accountID int64, publicID string, at time.Time) error {
	tag, err := storetest.SQL(t, st).Exec(context.Background(), `UPDATE recordings SET deleted_at = $3
		WHERE account_id = $1 AND public_id = $2 AND deleted_at IS NULL`, accountID, publicID, at)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("recording %s not deleted", publicID)
	}
	return err
}

type testTranscript struct {
	status, summaryStatus     string
	summary, intent, callback *string
	sentiment, urgency        *string
	actionItems               []string
}

func insertTestTranscript(t *testing.T, st *store.Store, accountID, callID, recordingID int64, tr testTranscript) {
	t.Helper()
	if tr.actionItems == nil {
		tr.actionItems = []string{}
	}
	_, err := storetest.SQL(t, st).Exec(context.Background(), `INSERT INTO transcripts (account_id, recording_id, call_id, status, summary_status,
			summary, intent, sentiment, urgency, action_items, callback_number)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		accountID, recordingID, callID, tr.status, tr.summaryStatus, tr.summary, tr.intent, tr.sentiment, tr.urgency,
		tr.actionItems, tr.callback)
	if err != nil {
		t.Fatal(err)
	}
}

func insertTestContact(t *testing.T, st *store.Store, accountID int64, name, e164 string, updatedAt time.Time) {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := storetest.SQL(t, st).QueryRow(ctx, `INSERT INTO contacts (account_id, public_id, display_name, source, updated_at)
		VALUES ($1, $2, $3, 'api', $4) RETURNING id`, accountID, store.NewPublicID(store.PrefixContact), name, updatedAt).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.SQL(t, st).Exec(ctx, `INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		VALUES ($1, $2, 0, $3, $3)`, id, accountID, e164); err != nil {
		t.Fatal(err)
	}
}

func insertTestNumber(t *testing.T, st *store.Store, accountID int64, e164, label, status string) (int64, string) {
	t.Helper()
	pid := store.NewPublicID(store.PrefixNumber)
	var id int64
	err := storetest.SQL(t, st).QueryRow(context.Background(), `INSERT INTO numbers (account_id, public_id, e164, label, status)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, accountID, pid, e164, label, status).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id, pid
}

func strp(s string) *string { return &s }

// callsFixture is one account's calls, described in newCallsFixture.
type callsFixture struct {
	h                        *harness
	tenant, other            apitest.Tenant
	tie, answered, noAnswer  insertedCall
	voicemail, filtered, old insertedCall
	foreign                  insertedCall
	recordingPublicID        string
}

// newCallsFixture: business calls, newest first, are tie, answered (same started_at, lower id),
// noAnswer, voicemail (yesterday) and old (40 days ago); filtered is screened out.
func newCallsFixture(t *testing.T) callsFixture {
	h := newCallsHarness(t)
	st := h.store
	f := callsFixture{h: h, tenant: apitest.NewTenant(t, st, plans.Business), other: apitest.NewTenant(t, st, plans.Business)}
	acct := f.tenant.Account.ID
	mainID, _ := insertTestNumber(t, st, acct, "+442079460001", "Main line", "assigned")

	hourAgo := callsNow.Add(-time.Hour)
	f.answered = insertTestCall(t, st, testCall{accountID: acct, numberID: &mainID, from: "+447700900001", callerName: "ACME Ltd",
		disposition: "answered", startedAt: hourAgo, forward: 42, pence: 12})
	f.tie = insertTestCall(t, st, testCall{accountID: acct, numberID: &mainID, from: "+447700900009", disposition: "busy", startedAt: hourAgo})
	f.noAnswer = insertTestCall(t, st, testCall{accountID: acct, numberID: &mainID, from: "+447700900002", disposition: "no-answer",
		startedAt: callsNow.Add(-2 * time.Hour)})
	f.voicemail = insertTestCall(t, st, testCall{accountID: acct, numberID: &mainID, from: "+447700900003", callerName: "Network Name",
		disposition: "voicemail", startedAt: callsNow.Add(-24 * time.Hour)})
	f.filtered = insertTestCall(t, st, testCall{accountID: acct, numberID: &mainID, from: "+447700900004", disposition: "failed",
		filtered: true, startedAt: callsNow.Add(-30 * time.Minute)})
	f.old = insertTestCall(t, st, testCall{accountID: acct, from: "+447700900005", to: "+442079469999", disposition: "answered",
		startedAt: time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)})

	otherAcct := f.other.Account.ID
	f.foreign = insertTestCall(t, st, testCall{accountID: otherAcct, from: "+447700900001", callerName: "Foreign Caller",
		disposition: "answered", startedAt: hourAgo})
	// Another account's contact with the same number names nothing here.
	insertTestContact(t, st, otherAcct, "Foreign Contact", "+447700900002", callsNow)

	// The most recently updated contact with the caller's number names the caller.
	insertTestContact(t, st, acct, "Old Name", "+447700900003", callsNow.Add(-48*time.Hour))
	insertTestContact(t, st, acct, "Jane Contact", "+447700900003", callsNow.Add(-time.Hour))

	var recID int64
	recID, f.recordingPublicID = insertTestRecording(t, st, acct, f.answered.id, "call", false)
	insertTestTranscript(t, st, acct, f.answered.id, recID, testTranscript{status: "completed", summaryStatus: "completed",
		summary: strp("Wants a quote for a boiler."), intent: strp("quote"), sentiment: strp("positive"), urgency: strp("high"),
		actionItems: []string{"Call back with a quote"}, callback: strp("+447700900001")})
	// A deleted voicemail recording gives no recording_public_id; its transcript still shows.
	vmID, _ := insertTestRecording(t, st, acct, f.voicemail.id, "voicemail", true)
	insertTestTranscript(t, st, acct, f.voicemail.id, vmID, testTranscript{status: "pending", summaryStatus: "pending",
		sentiment: strp("neutral"), urgency: strp("low")})
	// Another account's transcript with the same sentiment stays there.
	frID, _ := insertTestRecording(t, st, otherAcct, f.foreign.id, "call", false)
	insertTestTranscript(t, st, otherAcct, f.foreign.id, frID, testTranscript{status: "completed", summaryStatus: "completed",
		sentiment: strp("positive"), urgency: strp("high")})
	return f
}

func (f callsFixture) list(t *testing.T, query string) rawPage {
	t.Helper()
	resp := f.h.api.Do(t, f.tenant.OwnerKey, "GET", "/v1/calls"+query, nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/calls%s: %s", query, resp)
	}
	var p rawPage
	resp.JSON(t, &p)
	return p
}

func TestCallsListRowsAndOrder(t *testing.T) {
	f := newCallsFixture(t)
	p := f.list(t, "")
	want := []string{f.tie.publicID, f.answered.publicID, f.noAnswer.publicID, f.voicemail.publicID, f.old.publicID}
	if !reflect.DeepEqual(p.ids("public_id"), want) {
		t.Fatalf("default list = %v, want business calls newest first (ties by id) %v", p.ids("public_id"), want)
	}
	if p.Total != 5 || p.PerPage != 25 || p.CurrentPage != 1 || p.LastPage != 1 || p.NextPageURL != nil || p.PrevPageURL != nil {
		t.Errorf("envelope = %+v", p)
	}

	wantAnswered := map[string]any{
		"public_id": f.answered.publicID, "from": "+447700900001", "caller_display_name": "ACME Ltd",
		"to": "+442079460001", "to_name": "Main line", "direction": "inbound", "disposition": "answered",
		"started_at": "2026-07-15T09:30:00Z", "forward_seconds": float64(42), "total_rated_amount_pence": float64(12),
		"recording_public_id": f.recordingPublicID,
		"transcript": map[string]any{
			"status": "completed", "summary_status": "completed", "summary": "Wants a quote for a boiler.", "intent": "quote",
			"sentiment": "positive", "urgency": "high", "action_items": []any{"Call back with a quote"},
			"callback_number": "+447700900001",
		},
	}
	if !reflect.DeepEqual(p.Data[1], wantAnswered) {
		t.Errorf("answered call row =\n%v\nwant\n%v", p.Data[1], wantAnswered)
	}
	// No name from anywhere: the number. No recording, no transcript: null.
	if row := p.Data[2]; row["caller_display_name"] != "+447700900002" || row["recording_public_id"] != nil || row["transcript"] != nil {
		t.Errorf("no-answer row = %v", row)
	}
	// A contact's name wins over the network's; a deleted recording is not offered.
	vm := p.Data[3]
	wantTranscript := map[string]any{"status": "pending", "summary_status": "pending", "summary": nil, "intent": nil,
		"sentiment": "neutral", "urgency": "low", "action_items": []any{}, "callback_number": nil}
	if vm["caller_display_name"] != "Jane Contact" || vm["recording_public_id"] != nil || !reflect.DeepEqual(vm["transcript"], wantTranscript) {
		t.Errorf("voicemail row = %v", vm)
	}
	// A call to no known number has an empty to_name.
	if row := p.Data[4]; row["to_name"] != "" || row["to"] != "+442079469999" {
		t.Errorf("old row = %v", row)
	}

	// GET /calls/{call} has the same shape.
	got := f.h.api.Do(t, f.tenant.OwnerKey, "GET", "/v1/calls/"+f.answered.publicID, nil)
	if got.Status != 200 || !reflect.DeepEqual(got.Map(t), wantAnswered) {
		t.Errorf("GET call = %s", got)
	}
	for _, id := range []string{f.foreign.publicID, "call_unknown"} {
		if resp := f.h.api.Do(t, f.tenant.OwnerKey, "GET", "/v1/calls/"+id, nil); resp.Status != 404 {
			t.Errorf("GET /v1/calls/%s: %s, want 404", id, resp)
		}
	}
	// The other account sees only its own call.
	resp := f.h.api.Do(t, f.other.OwnerKey, "GET", "/v1/calls?activity=all", nil)
	var op rawPage
	resp.JSON(t, &op)
	if !reflect.DeepEqual(op.ids("public_id"), []string{f.foreign.publicID}) || op.Data[0]["caller_display_name"] != "Foreign Caller" {
		t.Errorf("other account's calls = %v", op.Data)
	}
}

func TestCallsListFilters(t *testing.T) {
	f := newCallsFixture(t)
	cases := []struct {
		query string
		want  []insertedCall
	}{
		{"?", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail, f.old}},
		{"?activity=business", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail, f.old}},
		{"?activity=filtered", []insertedCall{f.filtered}},
		{"?activity=all", []insertedCall{f.filtered, f.tie, f.answered, f.noAnswer, f.voicemail, f.old}},
		// Caller's number, as international digits with any spacing.
		{"?search=" + url.QueryEscape("+44 7700 900002"), []insertedCall{f.noAnswer}},
		{"?search=900002", []insertedCall{f.noAnswer}},
		// Dialled number.
		{"?search=469999", []insertedCall{f.old}},
		// Caller's name, case-insensitive: the network's name, or the contact's when there is one.
		{"?search=acme", []insertedCall{f.answered}},
		{"?search=JANE", []insertedCall{f.voicemail}},
		{"?search=network", nil},
		{"?search=old+name", nil},
		{"?search=foreign", nil},
		{"?search=" + url.QueryEscape("%"), nil},
		// Text with letters is a name, not a number: its digits do not match numbers.
		{"?search=" + url.QueryEscape("Ltd 2"), nil},
		{"?search=" + url.QueryEscape("acme 9"), nil},
		{"?search=900004&activity=all", []insertedCall{f.filtered}},
		// Periods in the account's time zone.
		{"?period=today", []insertedCall{f.tie, f.answered, f.noAnswer}},
		{"?period=7d", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail}},
		{"?period=30d", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail}},
		{"?period=month", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail}},
		{"?period=all", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail, f.old}},
		{"?period=custom&date_from=2026-06-05&date_to=2026-06-05", []insertedCall{f.old}},
		{"?period=custom&date_from=2026-06-05&date_to=2026-07-14&activity=all", []insertedCall{f.voicemail, f.old}},
		{"?period=today&activity=filtered", []insertedCall{f.filtered}},
		{"?period=today&status=busy", []insertedCall{f.tie}},
		{"?date_from=2026-07-14", []insertedCall{f.tie, f.answered, f.noAnswer, f.voicemail}},
		{"?date_to=2026-07-14", []insertedCall{f.voicemail, f.old}},
		// Outcome.
		{"?status=answered", []insertedCall{f.answered, f.old}},
		{"?status=busy", []insertedCall{f.tie}},
		{"?status=voicemail", []insertedCall{f.voicemail}},
		{"?status=failed", nil},
		{"?status=failed&activity=filtered", []insertedCall{f.filtered}},
		// Summary sentiment and urgency.
		{"?sentiment=positive", []insertedCall{f.answered}},
		{"?sentiment=neutral", []insertedCall{f.voicemail}},
		{"?sentiment=negative", nil},
		{"?urgency=high", []insertedCall{f.answered}},
		{"?urgency=low&sentiment=neutral", []insertedCall{f.voicemail}},
		{"?urgency=low&sentiment=positive", nil},
		// Together.
		{"?status=answered&period=today&search=acme&sentiment=positive", []insertedCall{f.answered}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			p := f.list(t, c.query)
			want := []string{}
			for _, w := range c.want {
				want = append(want, w.publicID)
			}
			if !reflect.DeepEqual(p.ids("public_id"), want) {
				t.Errorf("ids = %v, want %v", p.ids("public_id"), want)
			}
			if p.Total != len(want) {
				t.Errorf("total = %d, want %d", p.Total, len(want))
			}
			// One per page: the total is counted rather than seen on a short page.
			one := f.list(t, c.query+"&per_page=1")
			if one.Total != len(want) || one.LastPage != max(len(want), 1) || len(one.Data) != min(len(want), 1) {
				t.Errorf("per_page=1: total %d, last_page %d, %d rows; want total %d", one.Total, one.LastPage, len(one.Data), len(want))
			}
		})
	}
}

func TestCallsListPaging(t *testing.T) {
	f := newCallsFixture(t)
	p1 := f.list(t, "?per_page=2&status=")
	if !reflect.DeepEqual(p1.ids("public_id"), []string{f.tie.publicID, f.answered.publicID}) || p1.Total != 5 || p1.LastPage != 3 ||
		p1.PerPage != 2 || p1.CurrentPage != 1 || p1.PrevPageURL != nil || p1.NextPageURL == nil {
		t.Fatalf("page 1 = %+v", p1)
	}
	next, err := url.Parse(*p1.NextPageURL)
	if err != nil || next.Path != "/v1/calls" || next.Query().Get("page") != "2" || next.Query().Get("per_page") != "2" ||
		!strings.HasPrefix(*p1.NextPageURL, f.h.api.BaseURL) {
		t.Errorf("next_page_url = %s", *p1.NextPageURL)
	}
	// Following the link gives page 2.
	p2 := f.list(t, strings.TrimPrefix(*p1.NextPageURL, f.h.api.BaseURL+"/v1/calls"))
	if !reflect.DeepEqual(p2.ids("public_id"), []string{f.noAnswer.publicID, f.voicemail.publicID}) || p2.CurrentPage != 2 ||
		p2.PrevPageURL == nil || p2.NextPageURL == nil {
		t.Errorf("page 2 = %+v", p2)
	}
	p3 := f.list(t, "?per_page=2&page=3")
	if !reflect.DeepEqual(p3.ids("public_id"), []string{f.old.publicID}) || p3.NextPageURL != nil || p3.PrevPageURL == nil || p3.Total != 5 {
		t.Errorf("page 3 = %+v", p3)
	}
	if prev, _ := url.Parse(*p3.PrevPageURL); prev.Query().Get("page") != "2" {
		t.Errorf("prev_page_url = %s", *p3.PrevPageURL)
	}
	// Past the end: empty, not an error, and the total still counts.
	p9 := f.list(t, "?per_page=2&page=9")
	if len(p9.Data) != 0 || p9.Total != 5 || p9.LastPage != 3 || p9.NextPageURL != nil || p9.PrevPageURL == nil {
		t.Errorf("page 9 = %+v", p9)
	}
	// The maximum page size is allowed.
	if p := f.list(t, "?per_page=100"); p.PerPage != 100 || len(p.Data) != 5 {
		t.Errorf("per_page=100: %+v", p)
	}
}

func TestCallsListValidation(t *testing.T) {
	f := newCallsFixture(t)
	cases := map[string]string{
		"?activity=bogus":                          "activity",
		"?status=missed":                           "status",
		"?sentiment=happy":                         "sentiment",
		"?urgency=urgent":                          "urgency",
		"?period=year":                             "period",
		"?period=custom":                           "date_from",
		"?date_from=2026-13-01":                    "date_from",
		"?date_to=yesterday":                       "date_to",
		"?date_from=2026-07-10&date_to=2026-07-01": "date_from",
		"?period=today&date_from=2026-07-01":       "period",
		"?per_page=101":                            "per_page",
		"?per_page=0":                              "per_page",
		"?per_page=ten":                            "per_page",
		"?page=0":                                  "page",
		"?search=" + strings.Repeat("a", 101):      "search",
	}
	for query, field := range cases {
		t.Run(query, func(t *testing.T) {
			resp := f.h.api.Do(t, f.tenant.OwnerKey, "GET", "/v1/calls"+query, nil)
			if resp.Status != 422 {
				t.Fatalf("got %s, want 422", resp)
			}
			var body struct {
				Message string              `json:"message"`
				Errors  map[string][]string `json:"errors"`
			}
			resp.JSON(t, &body)
			if body.Message == "" || len(body.Errors[field]) == 0 {
				t.Errorf("422 body = %s, want an error for %s", resp.Body, field)
			}
		})
	}
}

func TestCallsAccess(t *testing.T) {
	h := newCallsHarness(t)
	team := apitest.NewTenant(t, h.store, plans.Team)
	call := insertTestCall(t, h.store, testCall{accountID: team.Account.ID, from: "+447700900001", startedAt: callsNow})
	for _, path := range []string{"/v1/calls", "/v1/calls/" + call.publicID} {
		resp := h.api.Do(t, team.OwnerKey, "GET", path, nil)
		if resp.Status != 403 || resp.Map(t)["reason"] != "addon_required" || resp.Map(t)["capability"] != "integrations" {
			t.Errorf("GET %s without the add-on: %s, want 403 addon_required", path, resp)
		}
	}
	withAddon := apitest.NewTenant(t, h.store, plans.Team, plans.AddonIntegrations)
	if resp := h.api.Do(t, withAddon.OwnerKey, "GET", "/v1/calls", nil); resp.Status != 200 {
		t.Errorf("with the add-on: %s", resp)
	}
	// Every key holds read, so a key with nothing else may list calls.
	business := apitest.NewTenant(t, h.store, plans.Business)
	readOnly := apitest.NewKey(t, h.store, business.Owner.ID)
	if resp := h.api.Do(t, readOnly, "GET", "/v1/calls", nil); resp.Status != 200 {
		t.Errorf("read-only key: %s, want 200", resp)
	}
	if resp := h.api.Do(t, "", "GET", "/v1/calls", nil); resp.Status != 401 {
		t.Errorf("no key: %s, want 401", resp)
	}
}

// In a zone whose offset is not a whole number of hours, days still follow the account's clock.
func TestCallsListPeriodInHalfHourZone(t *testing.T) {
	h := newCallsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	if _, err := storetest.SQL(t, h.store).Exec(context.Background(), `UPDATE accounts SET time_zone = 'Asia/Kolkata' WHERE id = $1`, tenant.Account.ID); err != nil {
		t.Fatal(err)
	}
	// Now is 16:00 on 15 July in Kolkata (UTC+5:30); the day began at 18:30 UTC on the 14th.
	at := func(hour, min int) insertedCall {
		return insertTestCall(t, h.store, testCall{accountID: tenant.Account.ID, from: "+919800000001",
			startedAt: time.Date(2026, 7, 14, hour, min, 0, 0, time.UTC)})
	}
	at(18, 0) // 23:30 on the 14th
	late := at(18, 40)
	later := at(20, 0)
	for _, perPage := range []string{"1", "25"} {
		resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/calls?period=today&per_page="+perPage, nil)
		var p rawPage
		resp.JSON(t, &p)
		if p.Total != 2 || p.Data[0]["public_id"] != later.publicID {
			t.Errorf("per_page=%s: %s", perPage, resp)
		}
	}
	resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/calls?date_to=2026-07-14&per_page=1", nil)
	var p rawPage
	resp.JSON(t, &p)
	if p.Total != 1 || p.Data[0]["public_id"] == late.publicID {
		t.Errorf("date_to=2026-07-14: %s", resp)
	}
}

// Ids and search text that PostgreSQL text cannot hold (a NUL byte, invalid UTF-8) name no
// call: 404 for ids, 422 for the search, never a 500.
func TestCallsUnstorableTextIsNotA500(t *testing.T) {
	f := newCallsFixture(t)
	for _, id := range []string{"%00", "call%00x", "%FF", "call_%C3"} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/calls/" + id},
			{"POST", "/v1/calls/" + id + "/transcribe"},
		} {
			if resp := f.h.api.Do(t, f.tenant.OwnerKey, c.method, c.path, nil); resp.Status != 404 {
				t.Errorf("%s %s: %s, want 404", c.method, c.path, resp)
			}
		}
	}
	for _, q := range []string{"%00", "acme%00", "%FF", "acme%FF"} {
		resp := f.h.api.Do(t, f.tenant.OwnerKey, "GET", "/v1/calls?search="+q, nil)
		if resp.Status != 422 || len(resp.Map(t)["errors"].(map[string]any)["search"].([]any)) == 0 {
			t.Errorf("search=%s: %s, want 422 for search", q, resp)
		}
	}
}
