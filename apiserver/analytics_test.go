package apiserver_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func getAnalytics(t *testing.T, h *harness, key, query string) apiserver.Analytics {
	t.Helper()
	resp := h.api.Do(t, key, "GET", "/v1/analytics"+query, nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/analytics%s: %s", query, resp)
	}
	var a apiserver.Analytics
	resp.JSON(t, &a)
	return a
}

func TestAnalytics(t *testing.T) {
	h := newCallsHarness(t)
	st := h.store
	// Team without the add-on: analytics need no Integrations.
	tenant := apitest.NewTenant(t, st, plans.Team)
	other := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID

	mainID, mainPID := insertTestNumber(t, st, acct, "+442079460001", "Main", "assigned")
	_, sparePID := insertTestNumber(t, st, acct, "+442079460002", "Spare", "assigned")
	_, releasedPID := insertTestNumber(t, st, acct, "+442079460003", "Gone", "released")
	foreignID, foreignPID := insertTestNumber(t, st, other.Account.ID, "+442079460099", "Theirs", "assigned")

	utc := func(month time.Month, day, hour, min int) time.Time {
		return time.Date(2026, month, day, hour, min, 0, 0, time.UTC)
	}
	call := func(disposition string, at time.Time, number *int64, filtered bool, forward int) insertedCall {
		return insertTestCall(t, st, testCall{accountID: acct, numberID: number, from: "+447700900001", disposition: disposition,
			startedAt: at, filtered: filtered, forward: forward})
	}
	sentiment := func(c insertedCall, s string) {
		recID, _ := insertTestRecording(t, st, acct, c.id, "call", false)
		insertTestTranscript(t, st, acct, c.id, recID, testTranscript{status: "completed", summaryStatus: "completed", sentiment: &s})
	}
	// Times are UTC; London is UTC+1 in July. "Now" is 15 July 11:30 in London.
	a1 := call("answered", utc(7, 15, 9, 0), &mainID, false, 30) // 15th, 10h
	sentiment(a1, "positive")
	a2 := call("answered", utc(7, 14, 13, 0), &mainID, false, 61) // 14th, 14h
	sentiment(a2, "negative")
	call("no-answer", utc(7, 13, 8, 0), &mainID, false, 0)        // 13th, 9h
	call("busy", utc(7, 13, 8, 10), &mainID, false, 0)            // 13th, 9h
	call("failed", utc(7, 12, 15, 0), nil, false, 0)              // 12th, 16h, to no number
	vm := call("voicemail", utc(7, 8, 23, 30), &mainID, false, 0) // 9th in London, 0h: the window's first day
	sentiment(vm, "neutral")
	call("blocked", utc(7, 15, 10, 0), &mainID, false, 0) // 15th, 11h
	screened := call("answered", utc(7, 15, 10, 15), &mainID, true, 500)
	sentiment(screened, "positive")                        // filtered calls are left out of sentiment too
	call("answered", utc(7, 8, 22, 30), &mainID, false, 0) // 8th in London: only in the 30-day window
	insertTestCall(t, st, testCall{accountID: other.Account.ID, numberID: &foreignID, from: "+447700900001", disposition: "answered",
		startedAt: utc(7, 15, 9, 0)})

	a := getAnalytics(t, h, tenant.OwnerKey, "?days=7")
	wantSummary := apiserver.AnalyticsSummary{Total: 7, Filtered: 1, Answered: 2, Missed: 3, Voicemail: 1, Blocked: 1,
		AnswerRate: 29, AvgForwardSeconds: 46}
	if a.Days != 7 || a.Summary != wantSummary {
		t.Errorf("days=7 summary = %d %+v, want %+v", a.Days, a.Summary, wantSummary)
	}
	wantDays := map[string]int{"2026-07-09": 1, "2026-07-10": 0, "2026-07-11": 0, "2026-07-12": 1, "2026-07-13": 2,
		"2026-07-14": 1, "2026-07-15": 2}
	if !reflect.DeepEqual(a.ByDay, wantDays) {
		t.Errorf("by_day = %v, want %v", a.ByDay, wantDays)
	}
	wantHours := make([]int, 24)
	wantHours[0], wantHours[9], wantHours[10], wantHours[11], wantHours[14], wantHours[16] = 1, 2, 1, 1, 1, 1
	if !reflect.DeepEqual(a.ByHour, wantHours) {
		t.Errorf("by_hour = %v, want %v", a.ByHour, wantHours)
	}
	wantNumbers := []apiserver.AnalyticsNumber{
		{PublicID: mainPID, E164: "+442079460001", Label: "Main", Total: 6, Answered: 2},
		{PublicID: sparePID, E164: "+442079460002", Label: "Spare", Total: 0, Answered: 0},
	}
	if !reflect.DeepEqual(a.ByNumber, wantNumbers) {
		t.Errorf("by_number = %+v, want %+v", a.ByNumber, wantNumbers)
	}
	if want := (apiserver.AnalyticsSentiment{Positive: 1, Neutral: 1, Negative: 1}); a.Sentiment != want {
		t.Errorf("sentiment = %+v, want %+v", a.Sentiment, want)
	}

	// The default window is 30 days, every one of them present.
	a30 := getAnalytics(t, h, tenant.OwnerKey, "")
	if a30.Days != 30 || len(a30.ByDay) != 30 || a30.ByDay["2026-06-16"] != 0 || a30.ByDay["2026-07-08"] != 1 {
		t.Errorf("default window: days %d, by_day %v", a30.Days, a30.ByDay)
	}
	if _, ok := a30.ByDay["2026-06-15"]; ok {
		t.Errorf("by_day reaches before the window: %v", a30.ByDay)
	}
	if a30.Summary.Total != 8 || a30.Summary.Answered != 3 || a30.Summary.AnswerRate != 38 || a30.Summary.AvgForwardSeconds != 30 {
		t.Errorf("30-day summary = %+v", a30.Summary)
	}
	if a90 := getAnalytics(t, h, tenant.OwnerKey, "?days=90"); len(a90.ByDay) != 90 || a90.Summary.Total != 8 {
		t.Errorf("90 days: %d days, summary %+v", len(a90.ByDay), a90.Summary)
	}

	// Only calls to one number; by_number still lists every number.
	onMain := getAnalytics(t, h, tenant.OwnerKey, "?days=7&number="+mainPID)
	if onMain.Summary.Total != 6 || onMain.Summary.Missed != 2 || onMain.ByDay["2026-07-12"] != 0 || onMain.ByHour[16] != 0 {
		t.Errorf("number=main: %+v", onMain)
	}
	onSpare := getAnalytics(t, h, tenant.OwnerKey, "?days=7&number="+sparePID)
	if (onSpare.Summary != apiserver.AnalyticsSummary{}) || onSpare.Sentiment != (apiserver.AnalyticsSentiment{}) ||
		!reflect.DeepEqual(onSpare.ByNumber, wantNumbers) || len(onSpare.ByDay) != 7 || onSpare.ByDay["2026-07-15"] != 0 {
		t.Errorf("number=spare: %+v", onSpare)
	}

	// Released, foreign and unknown numbers are not found, however long or odd the id.
	for _, pid := range []string{releasedPID, foreignPID, "num_unknown", strings.Repeat("n", 101), "%00", "num%FF"} {
		if resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/analytics?number="+pid, nil); resp.Status != 404 {
			t.Errorf("number=%s: %s, want 404", pid, resp)
		}
	}
	for _, q := range []string{"?days=15", "?days=abc", "?days=0", "?days=-7"} {
		resp := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/analytics"+q, nil)
		if resp.Status != 422 {
			t.Errorf("%s: %s, want 422", q, resp)
			continue
		}
		var body struct{ Errors map[string][]string }
		resp.JSON(t, &body)
		if len(body.Errors["days"]) == 0 {
			t.Errorf("%s: %s, want an error for days", q, resp.Body)
		}
	}

	// The other account sees only its own call.
	theirs := getAnalytics(t, h, other.OwnerKey, "?days=7")
	if theirs.Summary.Total != 1 || len(theirs.ByNumber) != 1 || theirs.ByNumber[0].PublicID != foreignPID {
		t.Errorf("other account: %+v", theirs)
	}
}

func TestAnalyticsEmptyAccountAndTimeZone(t *testing.T) {
	h := newCallsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Starter)
	a := getAnalytics(t, h, tenant.OwnerKey, "?days=7")
	if (a.Summary != apiserver.AnalyticsSummary{}) || len(a.ByDay) != 7 || len(a.ByHour) != 24 || len(a.ByNumber) != 0 {
		t.Errorf("empty account: %+v", a)
	}

	// Days and hours follow the account's own time zone: 02:00 UTC on 15 July is 22:00 on the
	// 14th in New York, where "today" is still the 15th (06:30).
	if _, err := storetest.SQL(t, h.store).Exec(context.Background(), `UPDATE accounts SET time_zone = 'America/New_York' WHERE id = $1`, tenant.Account.ID); err != nil {
		t.Fatal(err)
	}
	insertTestCall(t, h.store, testCall{accountID: tenant.Account.ID, from: "+15550100", disposition: "answered",
		startedAt: time.Date(2026, 7, 15, 2, 0, 0, 0, time.UTC)})
	insertTestCall(t, h.store, testCall{accountID: tenant.Account.ID, from: "+15550100", disposition: "answered",
		startedAt: time.Date(2026, 7, 9, 3, 59, 0, 0, time.UTC)}) // 8 July, 23:59 in New York: outside 7 days
	ny := getAnalytics(t, h, tenant.OwnerKey, "?days=7")
	if ny.ByDay["2026-07-14"] != 1 || ny.ByHour[22] != 1 || ny.Summary.Total != 1 || ny.Summary.AnswerRate != 100 {
		t.Errorf("New York account: %+v", ny)
	}
	if _, ok := ny.ByDay["2026-07-15"]; !ok {
		t.Errorf("by_day lacks today: %v", ny.ByDay)
	}
}

// Kolkata is UTC+5:30, so an hour of UTC straddles two local hours: the counts come from the
// calls themselves and still land on the account's own days and hours.
func TestAnalyticsHalfHourZone(t *testing.T) {
	h := newCallsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	if _, err := storetest.SQL(t, h.store).Exec(context.Background(), `UPDATE accounts SET time_zone = 'Asia/Kolkata' WHERE id = $1`, acct); err != nil {
		t.Fatal(err)
	}
	numID, numPID := insertTestNumber(t, h.store, acct, "+911140000001", "Delhi", "assigned")
	call := func(disposition string, at time.Time, filtered bool, forward int) insertedCall {
		return insertTestCall(t, h.store, testCall{accountID: acct, numberID: &numID, from: "+919800000001", to: "+911140000001",
			disposition: disposition, startedAt: at, filtered: filtered, forward: forward})
	}
	call("answered", time.Date(2026, 7, 14, 18, 20, 0, 0, time.UTC), false, 10) // 23:50 on the 14th
	call("no-answer", time.Date(2026, 7, 14, 18, 40, 0, 0, time.UTC), false, 0) // 00:10 on the 15th
	call("answered", time.Date(2026, 7, 15, 4, 0, 0, 0, time.UTC), true, 0)     // 09:30 on the 15th, screened out
	call("answered", time.Date(2026, 7, 8, 18, 29, 0, 0, time.UTC), false, 0)   // 23:59 on the 8th: before the window

	a := getAnalytics(t, h, tenant.OwnerKey, "?days=7")
	if want := (apiserver.AnalyticsSummary{Total: 2, Filtered: 1, Answered: 1, Missed: 1, AnswerRate: 50, AvgForwardSeconds: 10}); a.Summary != want {
		t.Errorf("summary = %+v, want %+v", a.Summary, want)
	}
	if a.ByDay["2026-07-14"] != 1 || a.ByDay["2026-07-15"] != 1 || len(a.ByDay) != 7 {
		t.Errorf("by_day = %v", a.ByDay)
	}
	wantHours := make([]int, 24)
	wantHours[23], wantHours[0] = 1, 1
	if !reflect.DeepEqual(a.ByHour, wantHours) {
		t.Errorf("by_hour = %v", a.ByHour)
	}
	if len(a.ByNumber) != 1 || a.ByNumber[0] != (apiserver.AnalyticsNumber{PublicID: numPID, E164: "+911140000001", Label: "Delhi", Total: 2, Answered: 1}) {
		t.Errorf("by_number = %+v", a.ByNumber)
	}
	if onNum := getAnalytics(t, h, tenant.OwnerKey, "?days=7&number="+numPID); onNum.Summary != a.Summary {
		t.Errorf("number filter: %+v", onNum.Summary)
	}
}
