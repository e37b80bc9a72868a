package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// The call list's totals and the analytics read the count tables alone while the account has no
// call-count deltas pending (other accounts' deltas do not matter), and read the *_current views
// once it has some; the figures are exact either way.
func TestCallCountReadsTakeTheViewsOnlyWithDeltasPending(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	st := storetest.Open(t, url)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Reads Ltd", Plan: plans.Business, TimeZone: "Europe/London"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460201", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := st.CreateNumber(ctx, store.NewNumber{AccountID: other.ID, E164: "+442079460202", Label: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	base := analyticsNow.Add(-30 * time.Hour).Truncate(time.Hour)
	seq := 0
	record := func(account int64, number store.NumberRow, calls int) {
		t.Helper()
		var in []store.CallReport
		for range calls {
			seq++
			in = append(in, store.CallReport{PlatformRef: fmt.Sprintf("reads-%d", seq), NewCall: store.NewCall{
				AccountID: account, NumberID: &number.ID, FromE164: fmt.Sprintf("+4477009002%02d", seq%7), ToE164: number.E164,
				CallerName: "Ann Lee", Disposition: []string{"answered", "voicemail", "busy"}[seq%3], Filtered: seq%5 == 0,
				StartedAt: base.Add(time.Duration(seq) * 37 * time.Minute), DurationSeconds: 60, ForwardSeconds: 20}})
		}
		recordCallReports(t, st, in)
	}

	rec := &planRecorder{}
	explained := explainingStore(t, url, rec)
	// read runs every reader once on a store that records its statements, checks its figures,
	// and reports whether any statement read a *_current view.
	read := func(step string) bool {
		t.Helper()
		rec.take()
		listTotalsMatchCalls(t, explained, step, acct.ID, base)
		checkAnalytics(t, explained, step, acct.ID, "Europe/London", num.PublicID)
		statements, errs := rec.take()
		for _, e := range errs {
			t.Error(e)
		}
		if len(statements) == 0 {
			t.Fatalf("after %s: no statement recorded", step)
		}
		for _, s := range statements {
			if strings.Contains(s.QueryText, "_current") {
				return true
			}
		}
		return false
	}

	record(acct.ID, num, 12)
	foldCallCounts(t, st)
	if read("folding every delta") {
		t.Errorf("a *_current view read with no deltas pending")
	}
	record(other.ID, theirs, 3)
	if read("another account's calls reported") {
		t.Errorf("a *_current view read with deltas pending for another account only")
	}
	record(acct.ID, num, 4)
	if !read("the account's calls reported") {
		t.Errorf("no *_current view read with the account's deltas pending: its new calls are left out")
	}
	foldCallCounts(t, st)
	if read("folding again") {
		t.Errorf("a *_current view read once the deltas are folded")
	}
}
