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

// countCheck is a query counting the rows of count tables (named with the suffix %[1]s) that
// differ from aggregates of calls.
type countCheck struct{ what, query string }

// countsMatchCalls fails unless call_counts_hourly and call_counts_daily equal aggregates of
// calls, as readers see them (with the pending deltas) and once the deltas are folded.
func countsMatchCalls(t *testing.T, st *store.Store, step string) {
	t.Helper()
	countQueryMatches(t, st, step, bucketCheck, true)
}

var bucketCheck = countCheck{"call count buckets", `SELECT
		(SELECT count(*) FROM (
			SELECT account_id, date_trunc('hour', started_at, 'UTC') AS hour, COALESCE(number_id, 0) AS number_id, filtered,
				disposition, count(*) AS calls, sum(forward_seconds) AS seconds
			FROM calls GROUP BY 1, 2, 3, 4, 5) a
		FULL JOIN (SELECT account_id, hour, number_id, filtered, disposition, sum(calls) AS calls, sum(forward_seconds) AS forward_seconds
			FROM call_counts_hourly%[1]s GROUP BY 1, 2, 3, 4, 5 HAVING sum(calls) <> 0 OR sum(forward_seconds) <> 0) b
			USING (account_id, hour, number_id, filtered, disposition)
		WHERE a.calls IS DISTINCT FROM b.calls OR a.seconds IS DISTINCT FROM b.forward_seconds)
		+
		(SELECT count(*) FROM (
			SELECT account_id, (started_at AT TIME ZONE 'UTC')::date AS day, filtered, disposition, count(*) AS calls
			FROM calls GROUP BY 1, 2, 3, 4) a
		FULL JOIN (SELECT account_id, day, filtered, disposition, sum(calls) AS calls
			FROM call_counts_daily%[1]s GROUP BY 1, 2, 3, 4 HAVING sum(calls) <> 0) b USING (account_id, day, filtered, disposition)
		WHERE a.calls IS DISTINCT FROM b.calls)`}

// countQueryMatches fails unless c finds no difference over the *_current views (pending
// deltas included) and, when fold, over the tables once every delta is folded.
func countQueryMatches(t *testing.T, st *store.Store, step string, c countCheck, fold bool) {
	t.Helper()
	ctx := context.Background()
	sources := []struct{ suffix, name string }{{"_current", "with the pending deltas"}}
	if fold {
		sources = append(sources, struct{ suffix, name string }{"", "folded"})
	}
	for _, source := range sources {
		if source.suffix == "" {
			foldCallCounts(t, st)
		}
		var diffs int
		if err := st.SQL().QueryRow(ctx, fmt.Sprintf(c.query, source.suffix)).Scan(&diffs); err != nil {
			t.Fatal(err)
		}
		if diffs != 0 {
			t.Fatalf("after %s: %d %s differ from the calls (%s)", step, diffs, c.what, source.name)
		}
	}
}

// foldCallCounts folds every pending call-count delta.
func foldCallCounts(t *testing.T, st *store.Store) {
	t.Helper()
	for {
		n, err := st.FoldCallCounts(context.Background(), 1000)
		if err != nil {
			t.Fatal(err)
		}
		pending, err := st.PendingCallCounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			return
		}
		if n == 0 {
			t.Fatalf("%d call-count deltas pending and none folded", pending)
		}
	}
}

func TestCallCountsFollowCalls(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Counts Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	exec := sqlExecutor(t, st)
	exec(`INSERT INTO numbers (account_id, public_id, e164) VALUES ($1, 'num_counts_a', '+442070000001'), ($1, 'num_counts_b', '+442070000002')`, acct.ID)
	// Many calls in one statement, over several days, hours, numbers and outcomes.
	exec(`INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, disposition, filtered, started_at, forward_seconds)
		SELECT $1, 'call_counts_' || g, CASE g % 3 WHEN 0 THEN NULL ELSE (SELECT id FROM numbers WHERE public_id = 'num_counts_' || CASE g % 3 WHEN 1 THEN 'a' ELSE 'b' END) END,
			'+4477009' || lpad(g::text, 5, '0'), '+442070000001',
			(ARRAY['answered', 'no-answer', 'voicemail', 'busy', 'failed', 'blocked', 'in-progress'])[1 + g % 7],
			g % 5 = 0, timestamptz '2026-07-01 00:00Z' + g * interval '37 minutes', g % 90
		FROM generate_series(1, 400) g`, acct.ID)
	exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, disposition, started_at) VALUES
		($1, 'call_counts_other', '+447700900001', '+442070000009', 'answered', '2026-07-03 10:00Z')`, other.ID)
	countsMatchCalls(t, st, "inserting")

	exec(`UPDATE calls SET disposition = 'answered', forward_seconds = forward_seconds + 1 WHERE account_id = $1 AND disposition = 'in-progress'`, acct.ID)
	countsMatchCalls(t, st, "changing outcomes")
	exec(`UPDATE calls SET started_at = started_at + interval '3 hours', filtered = NOT filtered WHERE public_id LIKE 'call_counts_1%'`)
	countsMatchCalls(t, st, "moving calls")
	exec(`UPDATE calls SET ended_at = started_at + interval '1 minute'`)
	countsMatchCalls(t, st, "an update that moves nothing")
	exec(`DELETE FROM numbers WHERE public_id = 'num_counts_b'`)
	countsMatchCalls(t, st, "deleting a number")
	exec(`DELETE FROM calls WHERE public_id LIKE 'call_counts_2%'`)
	countsMatchCalls(t, st, "deleting calls")

	// Totals from the counts equal counting the calls, for every period shape.
	day := func(d, h int) *time.Time { v := time.Date(2026, 7, d, h, 0, 0, 0, time.UTC); return &v }
	odd := time.Date(2026, 7, 2, 10, 30, 0, 0, time.UTC)
	periods := []struct{ from, to *time.Time }{
		{nil, nil}, {day(2, 0), nil}, {nil, day(5, 0)}, {day(2, 0), day(5, 0)}, {day(2, 7), day(5, 19)},
		{day(3, 5), day(3, 9)}, {day(3, 23), day(4, 1)}, {day(2, 5), nil}, {nil, day(6, 13)}, {&odd, day(4, 0)},
	}
	for _, activity := range []string{"business", "filtered", "all"} {
		for _, status := range []string{"", "answered", "busy"} {
			for i, p := range periods {
				f := store.CallFilter{Activity: activity, Status: status, From: p.from, To: p.to, Limit: 1}
				_, total, err := st.ListCalls(ctx, acct.ID, f)
				if err != nil {
					t.Fatal(err)
				}
				var want int
				err = st.SQL().QueryRow(ctx, `SELECT count(*) FROM calls WHERE account_id = $1
					AND ($2 = 'all' OR filtered = ($2 = 'filtered')) AND ($3 = '' OR disposition = $3)
					AND ($4::timestamptz IS NULL OR started_at >= $4) AND ($5::timestamptz IS NULL OR started_at < $5)`,
					acct.ID, activity, status, p.from, p.to).Scan(&want)
				if err != nil {
					t.Fatal(err)
				}
				if total != want {
					t.Errorf("%s", fmt.Sprintf("activity=%s status=%q period %d: total %d, want %d", activity, status, i, total, want))
				}
			}
		}
	}

	exec(`DELETE FROM accounts WHERE id = $1`, other.ID)
	countsMatchCalls(t, st, "deleting an account")
	exec(`TRUNCATE calls CASCADE`)
	countsMatchCalls(t, st, "truncating calls")
}
