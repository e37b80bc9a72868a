package store_test

import (
	"context"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// sentimentCountsMatchCalls fails unless call_counts_sentiment_daily equals aggregates of calls.
func sentimentCountsMatchCalls(t *testing.T, st *store.Store, step string) {
	t.Helper()
	countQueryMatches(t, st, step, sentimentCheck, true)
}

var sentimentCheck = countCheck{"sentiment count rows", `SELECT count(*) FROM (
			SELECT account_id, (started_at AT TIME ZONE 'UTC')::date AS day, filtered, disposition,
				COALESCE(sentiment, '') AS sentiment, COALESCE(urgency, '') AS urgency, count(*) AS calls
			FROM calls WHERE sentiment IS NOT NULL OR urgency IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6) a
		FULL JOIN (SELECT account_id, day, filtered, disposition, sentiment, urgency, sum(calls) AS calls
			FROM call_counts_sentiment_daily%[1]s GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(calls) <> 0) b
			USING (account_id, day, filtered, disposition, sentiment, urgency)
		WHERE a.calls IS DISTINCT FROM b.calls`}

// The count triggers on calls run static SQL whose plans PL/pgSQL keeps for the session
// (migration 00021). A plan made for the first statement (one row) is used again for later
// ones of every size and operation on the same connection; the counts must stay exact.
func TestCountTriggersStayExactWithReusedPlans(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Plans Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := st.SQL().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	check := func(step string) {
		t.Helper()
		countsMatchCalls(t, st, step)
		callerCountsMatchCalls(t, st, step)
		sentimentCountsMatchCalls(t, st, step)
	}
	exec(`INSERT INTO numbers (account_id, public_id, e164) VALUES ($1, 'num_plans_a', '+442070000011'), ($1, 'num_plans_b', '+442070000012')`, acct.ID)
	exec(`INSERT INTO contacts (account_id, public_id, display_name, source) VALUES ($1, 'con_plans', 'Ann Lee', 'manual')`, acct.ID)
	exec(`INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		SELECT id, account_id, 0, '+447700900001', '07700 900001' FROM contacts WHERE public_id = 'con_plans'`)

	// One call per statement first, so every trigger statement is planned for a one-row change.
	for range 3 {
		for _, op := range []struct {
			step, sql string
			args      []any
		}{
			{"a one-call insert", `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name, disposition, started_at, forward_seconds, sentiment)
				VALUES ($1, 'call_plans_one', (SELECT id FROM numbers WHERE public_id = 'num_plans_a'), '+447700900001', '+442070000011',
					'Ann', 'answered', '2026-07-01 10:15Z', 40, 'positive')`, []any{acct.ID}},
			{"a one-call update", `UPDATE calls SET disposition = 'voicemail', sentiment = 'negative', urgency = 'high', caller_name = 'ANN L',
				started_at = '2026-07-02 23:59Z' WHERE public_id = 'call_plans_one'`, nil},
			{"a one-call delete", `DELETE FROM calls WHERE public_id = 'call_plans_one'`, nil},
		} {
			exec(op.sql, op.args...)
			check(op.step)
		}
	}

	// Then many calls per statement, of two accounts, on the same connection and plans.
	exec(`INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name, disposition, filtered, started_at, forward_seconds, sentiment, urgency)
		SELECT CASE WHEN g % 4 = 0 THEN $2::bigint ELSE $1::bigint END, 'call_plans_' || g,
			CASE g % 3 WHEN 0 THEN NULL ELSE (SELECT id FROM numbers WHERE public_id = 'num_plans_' || CASE g % 3 WHEN 1 THEN 'a' ELSE 'b' END) END,
			'+4477009000' || (g % 7), '+442070000011', (ARRAY['Ann', 'Bob', 'ann', ''])[1 + g % 4],
			(ARRAY['answered', 'no-answer', 'voicemail', 'busy', 'failed', 'blocked', 'in-progress'])[1 + g % 7],
			g % 5 = 0, timestamptz '2026-07-01 00:00Z' + g * interval '37 minutes', g % 90,
			(ARRAY['positive', 'neutral', 'negative', NULL])[1 + g % 4], (ARRAY['high', NULL, 'low'])[1 + g % 3]
		FROM generate_series(1, 500) g`, acct.ID, other.ID)
	check("a 500-call insert")
	exec(`UPDATE calls SET disposition = 'answered', number_id = NULL, caller_name = upper(caller_name), sentiment = NULL,
			started_at = started_at + interval '50 minutes', forward_seconds = forward_seconds + 1
		WHERE public_id LIKE 'call_plans_%' AND id % 3 = 0`)
	check("a many-call update")
	exec(`UPDATE calls SET filtered = NOT filtered, urgency = 'high' WHERE public_id LIKE 'call_plans_%'`)
	check("an update of every call")
	exec(`DELETE FROM calls WHERE public_id LIKE 'call_plans_%' AND id % 2 = 0`)
	check("a many-call delete")
	exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, disposition, started_at)
		VALUES ($1, 'call_plans_last', '+447700900001', '+442070000011', 'busy', '2026-07-03 01:00Z')`, acct.ID)
	check("a one-call insert after many")
	exec(`DELETE FROM calls WHERE account_id = $1`, other.ID)
	check("deleting one account's calls")
}
