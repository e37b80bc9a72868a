package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Calls recorded by the ingestion path leave their counts as deltas (migration 00080). Every
// count a reader sees stays exact while they wait, through updates, deletes, changes of the
// directory and of the account's zone made before they are folded, through a fold in parts,
// an insert by the previous release's path (which folds what it finds), and the deletion of
// an account whose deltas wait.
func TestCallCountDeltasStayExact(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Deltas Ltd", Plan: plans.Business, TimeZone: "Asia/Kathmandu"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := st.CreateAccount(ctx, store.NewAccount{Name: "Gone Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460101", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := st.CreateNumber(ctx, store.NewNumber{AccountID: gone.ID, E164: "+442079460102", Label: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, st, `INSERT INTO contacts (account_id, public_id, display_name, source) VALUES ($1, 'con_deltas', 'Ann Lee', 'manual')`, acct.ID)
	exec(t, st, `INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		SELECT id, account_id, 0, '+447700900001', '07700 900001' FROM contacts WHERE public_id = 'con_deltas'`)

	seq := 0
	report := func(account int64, number *store.NumberRow, from, name, disp string, at time.Time, filtered bool) store.CallReport {
		seq++
		return store.CallReport{PlatformRef: fmt.Sprintf("deltas-%d", seq), NewCall: store.NewCall{AccountID: account, NumberID: &number.ID,
			FromE164: from, ToE164: number.E164, CallerName: name, Disposition: disp, Filtered: filtered, StartedAt: at,
			DurationSeconds: 60, ForwardSeconds: 20}}
	}
	record := func(in ...store.CallReport) {
		t.Helper()
		recordCallReports(t, st, in)
	}
	pending := func() int64 {
		t.Helper()
		n, err := st.PendingCallCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := analyticsNow.Add(-48 * time.Hour).Truncate(time.Hour)
	// exactWhilePending checks what readers see without folding anything.
	exactWhilePending := func(step string, zone string) {
		t.Helper()
		for _, c := range []countCheck{bucketCheck, callerCheck, sentimentCheck} {
			countQueryMatches(t, st, step, c, false)
		}
		checkAnalytics(t, st, step, acct.ID, zone, num.PublicID)
		listTotalsMatchCalls(t, st, step, acct.ID, base)
	}

	// Across local midnights and hours of Kathmandu (UTC+5:45), filtered and not, from a
	// contact's number and from others.
	var batch []store.CallReport
	for i, disp := range []string{"answered", "no-answer", "voicemail", "busy", "answered", "blocked", "answered", "failed"} {
		from, name := "+447700900001", "Ann"
		if i%3 == 1 {
			from, name = fmt.Sprintf("+4477009001%02d", i), "Bob Shaw"
		}
		batch = append(batch, report(acct.ID, &num, from, name, disp, base.Add(time.Duration(i)*47*time.Minute), i == 5))
	}
	record(batch[:3]...)
	record(batch[3:]...) // a report of several calls at once
	record(report(gone.ID, &theirs, "+447700900009", "Cy", "answered", base, false))
	if got := pending(); got != 9 {
		t.Fatalf("%d deltas pending after 9 calls reported, want 9", got)
	}
	var folded int64
	if err := st.SQL().QueryRow(ctx, `SELECT COALESCE(sum(calls), 0) FROM call_counts_daily WHERE account_id = $1`, acct.ID).Scan(&folded); err != nil {
		t.Fatal(err)
	}
	if folded != 0 {
		t.Fatalf("the count tables hold %d of the reported calls before any fold", folded)
	}
	exactWhilePending("reporting calls", "Asia/Kathmandu")

	// Changes made while the deltas wait take the full path.
	exec(t, st, `UPDATE calls SET disposition = 'answered', sentiment = 'negative', urgency = 'high' WHERE account_id = $1 AND disposition = 'no-answer'`, acct.ID)
	exec(t, st, `UPDATE calls SET caller_name = 'ANN LEE', started_at = started_at + interval '5 hours' WHERE account_id = $1 AND disposition = 'busy'`, acct.ID)
	exec(t, st, `DELETE FROM calls WHERE account_id = $1 AND disposition = 'voicemail'`, acct.ID)
	exactWhilePending("updating and deleting calls", "Asia/Kathmandu")
	exec(t, st, `INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		SELECT id, account_id, 1, '+447700900101', '07700 900101' FROM contacts WHERE public_id = 'con_deltas'`)
	exec(t, st, `DELETE FROM contact_phones WHERE e164 = '+447700900001'`)
	exactWhilePending("changing the directory", "Asia/Kathmandu")

	// A fold in parts: readers see the same figures between them.
	if n, err := st.FoldCallCounts(ctx, 3); err != nil || n != 3 {
		t.Fatalf("a fold of at most 3 moved %d (%v)", n, err)
	}
	exactWhilePending("folding some", "Asia/Kathmandu")

	// A change of zone folds the account's deltas and recounts its local days.
	setAccountZone(t, st, acct.ID, "America/St_Johns")
	if got := pending(); got != 1 {
		t.Fatalf("%d deltas pending after the change of zone, want only the other account's", got)
	}
	exactWhilePending("changing the zone", "America/St_Johns")
	foldCallCounts(t, st)
	countsMatchCalls(t, st, "folding all")
	callerCountsMatchCalls(t, st, "folding all")
	sentimentCountsMatchCalls(t, st, "folding all")
	checkAnalytics(t, st, "folding all", acct.ID, "America/St_Johns", num.PublicID)

	// The previous release inserts calls with the full path and folds what is pending.
	record(report(acct.ID, &num, "+447700900101", "Ann", "answered", base.Add(time.Hour), false))
	if _, _, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, NumberID: &num.ID, FromE164: "+447700900777",
		ToE164: num.E164, Disposition: "voicemail", StartedAt: base.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != 0 {
		t.Fatalf("%d deltas pending after a full-path insert, want them folded", got)
	}
	exactWhilePending("a full-path insert", "America/St_Johns")

	// An account deleted while its deltas wait: they are left out of the fold.
	record(report(gone.ID, &theirs, "+447700900009", "Cy", "busy", base, false))
	exec(t, st, `DELETE FROM accounts WHERE id = $1`, gone.ID)
	foldCallCounts(t, st)
	countsMatchCalls(t, st, "deleting an account with deltas pending")
	callerCountsMatchCalls(t, st, "deleting an account with deltas pending")
}

// listTotalsMatchCalls fails unless the totals ListCalls gives with a page of one call (summed
// from count buckets where they can answer) equal the number of calls its pages list, for
// filters around base: each kind of count ListCalls sums, as readers see it at that moment.
func listTotalsMatchCalls(t *testing.T, st *store.Store, step string, accountID int64, base time.Time) {
	t.Helper()
	at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
	day := base.UTC().Truncate(24 * time.Hour)
	for _, f := range []store.CallFilter{
		{Activity: "business"}, {Activity: "all"}, {Activity: "filtered"}, {Activity: "all", Status: "answered"},
		{Activity: "all", From: &day}, {Activity: "all", From: at(2 * time.Hour), To: at(5 * time.Hour)},
		{Activity: "all", Sentiment: "negative"}, {Activity: "all", Search: "ann"}, {Activity: "business", Search: "bob"},
	} {
		checkTotalMatchesList(t, st, accountID, f, fmt.Sprintf("after %s: %+v", step, f))
	}
}
