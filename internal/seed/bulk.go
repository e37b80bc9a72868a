package seed

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// BulkOptions shape bulk call history.
type BulkOptions struct {
	// Now is the newest call's time; calls spread over the History before it.
	Now     time.Time
	History time.Duration
	// TranscribedEvery gives every n-th call a recording and a completed transcript with a
	// sentiment and urgency (0: none), so the sentiment and urgency filters have data.
	TranscribedEvery int
	// Batch is rows per COPY statement (default 100,000).
	Batch    int
	Progress io.Writer
	Seed     uint64
}

// BulkCalls adds n calls to an account with PostgreSQL's COPY, spread over numberIDs, for
// benchmarks. The statement-level count triggers run once per COPY batch, so the call counts
// stay exact.
func BulkCalls(ctx context.Context, st *store.Store, accountID int64, numberIDs []int64, n int, o BulkOptions) error {
	if o.History == 0 {
		o.History = 120 * 24 * time.Hour
	}
	if o.Batch == 0 {
		o.Batch = 100_000
	}
	rng := rand.New(rand.NewPCG(o.Seed, uint64(accountID)))
	dispositions := []string{"answered", "answered", "answered", "answered", "no-answer", "voicemail", "busy", "failed", "blocked"}
	names := []string{"", "", "Priya Shah", "Tom Baker", "Grace Okafor", "Ahmed Khan", "Lucy Evans", "Ola Adeyemi"}
	sentiments := []string{"positive", "neutral", "negative"}
	urgencies := []string{"low", "normal", "high"}
	prefix := store.NewPublicID(store.PrefixCall)
	for done := 0; done < n; {
		size := min(o.Batch, n-done)
		rows := make([][]any, size)
		for i := range rows {
			num := numberIDs[rng.IntN(len(numberIDs))]
			started := o.Now.Add(-time.Duration(rng.Int64N(int64(o.History)))).Truncate(time.Second)
			d := dispositions[rng.IntN(len(dispositions))]
			duration := 0
			if d == "answered" || d == "voicemail" {
				duration = 20 + rng.IntN(600)
			}
			from := fmt.Sprintf("+4477009%05d", rng.IntN(100_000))
			rows[i] = []any{accountID, fmt.Sprintf("%s%08d", prefix, done+i), num, from, "+442079460000",
				names[rng.IntN(len(names))], d, rng.IntN(25) == 0, started, started.Add(time.Duration(duration) * time.Second),
				duration, max(duration-10, 0), max(duration-10, 0)}
		}
		if _, err := st.Pool.CopyFrom(ctx, pgx.Identifier{"calls"},
			[]string{"account_id", "public_id", "number_id", "from_e164", "to_e164", "caller_name", "disposition", "filtered",
				"started_at", "ended_at", "duration_seconds", "talk_seconds", "forward_seconds"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("copy calls: %w", err)
		}
		done += size
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "    account %d: %d of %d calls\n", accountID, done, n)
		}
	}
	if o.TranscribedEvery <= 0 {
		return nil
	}
	// Recordings and transcripts for every n-th answered call, set-based in the database. The
	// per-row trigger that copies a transcript's sentiment onto its call is switched off while
	// they are inserted (session_replication_role, superuser only: the benchmark's own cluster)
	// and the copy is made in one statement instead, with triggers back on: the statement-level
	// count triggers on calls keep the sentiment counts of call_counts_local.
	err := st.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH picked AS (
				SELECT id, account_id, started_at FROM calls
				WHERE account_id = $1 AND disposition = 'answered' AND id % $2 = 0),
			recs AS (
				INSERT INTO recordings (account_id, public_id, call_id, kind, storage_key, duration_seconds, created_at)
				SELECT account_id, 'rec_b' || id, id, 'call', 'bulk/' || id || '.wav', 60, started_at FROM picked
				RETURNING id, call_id, account_id)
			INSERT INTO transcripts (account_id, recording_id, call_id, status, summary_status, summary, intent, sentiment, urgency)
			SELECT account_id, id, call_id, 'completed', 'completed', 'Caller asked for a visit.', 'book_repair',
				($3::text[])[1 + call_id % 3], ($4::text[])[1 + (call_id / 3) % 3] FROM recs`,
			accountID, o.TranscribedEvery, sentiments, urgencies); err != nil {
			return err
		}
		// Statistics first: planned with none for this account's calls and transcripts, the join
		// below can take a nested loop over every call of the account for each transcript.
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = origin; ANALYZE calls, transcripts`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE calls c SET sentiment = t.sentiment, urgency = t.urgency
			FROM transcripts t WHERE t.call_id = c.id AND t.account_id = $1 AND c.account_id = $1`, accountID)
		return err
	})
	if err != nil {
		return fmt.Errorf("bulk transcripts: %w", err)
	}
	_, err = st.Pool.Exec(ctx, `ANALYZE calls; ANALYZE recordings; ANALYZE transcripts; ANALYZE call_counts_hourly; ANALYZE call_counts_daily; ANALYZE call_counts_local`)
	return err
}
