package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// One account's call writers, each holding its transaction open, do not wait for each other
// on the count rows every call of the account shares (the day's and the hour's buckets, the
// local day of the number, calls without a caller name: migration 00060); and the counts,
// summed over the shards the writers and later updates and deletes used, stay exact.
func TestCallCountWritersOfOneAccountDoNotWait(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Busy Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442070000601", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	at := analyticsNow.Add(-time.Hour)
	insert := func(tx pgx.Tx, publicID string) error {
		_, err := tx.Exec(ctx, `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, disposition,
				started_at, forward_seconds, sentiment, urgency)
			VALUES ($1, $2, $3, '+447700900601', '+442070000601', 'answered', $4, 30, 'positive', 'high')`,
			acct.ID, publicID, num.ID, at)
		return err
	}
	var open []pgx.Tx
	t.Cleanup(func() {
		for _, tx := range open {
			_ = tx.Rollback(ctx)
		}
	})
	begin := func() pgx.Tx {
		t.Helper()
		// A connection of its own: more writers than the pool has connections.
		conn, err := pgx.Connect(ctx, st.SQL().Config().ConnConfig.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, tx)
		// A writer queued behind another's row lock fails here instead of waiting for its commit.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	commitAll := func() {
		t.Helper()
		for _, tx := range open {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		open = nil
	}

	// Eight writers at once (a replica records two groups of reports at a time), each call
	// alike: on one row per key, the second would wait for the first to commit.
	const writers = 8
	for i := range writers {
		tx := begin()
		if err := insert(tx, fmt.Sprintf("call_shard_%d", i)); err != nil {
			t.Fatalf("writer %d of %d, the others still open: %v", i+1, writers, err)
		}
	}
	var waiting int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 {
		t.Errorf("%d locks waited for while the writers were open", waiting)
	}
	commitAll()
	var shards int
	if err := st.SQL().QueryRow(ctx, `SELECT count(DISTINCT shard) FROM call_name_counts WHERE account_id = $1`, acct.ID).Scan(&shards); err != nil {
		t.Fatal(err)
	}
	if shards != writers {
		t.Errorf("the calls without a caller name are in %d shards, want one per writer (%d)", shards, writers)
	}
	checkCountsExact := func(step string) {
		t.Helper()
		countsMatchCalls(t, st, step)
		callerCountsMatchCalls(t, st, step)
		sentimentCountsMatchCalls(t, st, step)
		checkAnalytics(t, st, step, acct.ID, "Europe/London", num.PublicID)
		for _, c := range []struct {
			filter store.CallFilter
			where  string
		}{
			{store.CallFilter{}, "true"},
			{store.CallFilter{Status: "answered"}, "disposition = 'answered'"},
			{store.CallFilter{Sentiment: "positive"}, "sentiment = 'positive'"},
		} {
			var want int
			if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM calls WHERE account_id = $1 AND NOT filtered AND `+c.where,
				acct.ID).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if _, total, err := st.ListCalls(ctx, acct.ID, c.filter); err != nil {
				t.Fatal(err)
			} else if total != want {
				t.Errorf("%s: total of %+v is %d, want %d", step, c.filter, total, want)
			}
		}
	}
	checkCountsExact("eight writers at once")

	// An update and a delete of calls counted in shards 5 and 7 while another writer holds shard
	// 0: they take shard 1, whose row of the day then counts fewer answered calls than none;
	// the sums stay exact.
	holder := begin()
	if err := insert(holder, "call_shard_holder"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(ctx, `UPDATE calls SET disposition = 'no-answer', sentiment = 'negative', forward_seconds = 0
		WHERE public_id = 'call_shard_5'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SQL().Exec(ctx, `DELETE FROM calls WHERE public_id = 'call_shard_7'`); err != nil {
		t.Fatal(err)
	}
	commitAll()
	var negative int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM call_counts_local WHERE account_id = $1 AND answered < 0`, acct.ID).Scan(&negative); err != nil {
		t.Fatal(err)
	}
	if negative == 0 {
		t.Error("the update and the delete were written in the shard of the calls they changed, not in a free one")
	}
	checkCountsExact("an update and a delete in other shards")

	// A change of zone recounts the account into one shard.
	setAccountZone(t, st, acct.ID, "Asia/Kathmandu")
	checkAnalytics(t, st, "recounted", acct.ID, "Asia/Kathmandu", num.PublicID)
	if err := st.SQL().QueryRow(ctx, `SELECT count(DISTINCT shard) FROM call_counts_local WHERE account_id = $1`, acct.ID).Scan(&shards); err != nil {
		t.Fatal(err)
	}
	if shards != 1 {
		t.Errorf("after a recount the local counts are in %d shards, want 1", shards)
	}
}

// The counts a database had before the shards (migration 00060) are kept by it: rows written
// by the old triggers become shard 0, and later writes add to them.
func TestShardMigrationKeepsCounts(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewEmptyDatabaseURL(t)
	if err := store.MigrateTo(ctx, url, 50); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Before Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, st, `INSERT INTO numbers (account_id, public_id, e164) VALUES ($1, 'num_before', '+442070000602')`, acct.ID)
	exec(t, st, `INSERT INTO contacts (account_id, public_id, display_name, source) VALUES ($1, 'con_before', 'Ada Before', 'manual')`, acct.ID)
	exec(t, st, `INSERT INTO contact_phones (account_id, contact_id, position, e164, raw_number)
		SELECT $1, id, 0, '+447700900002', '07700 900002' FROM contacts WHERE public_id = 'con_before'`, acct.ID)
	insert := `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name, disposition, filtered,
			started_at, forward_seconds, sentiment, urgency)
		SELECT $1, $2 || g, (SELECT id FROM numbers WHERE public_id = 'num_before'), '+44770090000' || g % 4, '+442070000602',
			(ARRAY['', 'Ada', 'Bob'])[1 + g % 3], (ARRAY['answered', 'no-answer', 'voicemail'])[1 + g % 3], g % 5 = 0,
			$3::timestamptz - g * interval '7 hours', g % 60,
			(ARRAY[NULL, 'positive', 'negative'])[1 + g % 3], (ARRAY[NULL, 'high'])[1 + g % 2]
		FROM generate_series(1, 200) g`
	exec(t, st, insert, acct.ID, "call_before_", analyticsNow)
	if _, err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	checkAll := func(step string) {
		t.Helper()
		countsMatchCalls(t, st, step)
		callerCountsMatchCalls(t, st, step)
		sentimentCountsMatchCalls(t, st, step)
		checkAnalytics(t, st, step, acct.ID, "Europe/London")
	}
	checkAll("migrating")
	exec(t, st, insert, acct.ID, "call_after_", analyticsNow)
	exec(t, st, `DELETE FROM calls WHERE public_id LIKE 'call_before_1%'`)
	checkAll("writing after migrating")
}
