package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bulk call history for benchmarks and demo data (internal/seed), written with COPY.

// BulkCall is one call row written by CopyCalls.
type BulkCall struct {
	AccountID, NumberID            int64
	PublicID, From, To, CallerName string
	Disposition                    string
	Filtered                       bool
	StartedAt, EndedAt             time.Time
	DurationSeconds, TalkSeconds   int
	ForwardSeconds                 int
}

// CopyCalls adds calls with one COPY. The statement-level count triggers run once for it, so
// the call counts stay exact.
func (s *Store) CopyCalls(ctx context.Context, calls []BulkCall) error {
	rows := make([][]any, len(calls))
	for i, c := range calls {
		rows[i] = []any{c.AccountID, c.PublicID, c.NumberID, c.From, c.To, c.CallerName, c.Disposition, c.Filtered,
			c.StartedAt, c.EndedAt, c.DurationSeconds, c.TalkSeconds, c.ForwardSeconds}
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"calls"},
		[]string{"account_id", "public_id", "number_id", "from_e164", "to_e164", "caller_name", "disposition", "filtered",
			"started_at", "ended_at", "duration_seconds", "talk_seconds", "forward_seconds"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy calls: %w", err)
	}
	return nil
}

// AddBulkTranscripts gives every n-th answered call of the account (by row id) a recording and
// a completed transcript whose sentiment and urgency cycle through sentiments and urgencies,
// set-based in one transaction. The per-row trigger that copies a transcript's sentiment onto
// its call is switched off while they are inserted (session_replication_role, superuser only:
// a benchmark's own cluster) and the copy is made in one statement instead, with triggers back
// on: the statement-level count triggers on calls keep the sentiment counts of
// call_counts_local.
func (s *Store) AddBulkTranscripts(ctx context.Context, accountID int64, every int, sentiments, urgencies []string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
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
			accountID, every, sentiments, urgencies); err != nil {
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
}

// AnalyzeCallTables refreshes the planner's statistics of the calls and the tables read with
// them, after a bulk load.
func (s *Store) AnalyzeCallTables(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `ANALYZE calls; ANALYZE recordings; ANALYZE transcripts; ANALYZE call_counts_hourly; ANALYZE call_counts_daily; ANALYZE call_counts_local`)
	return err
}
