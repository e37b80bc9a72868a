package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// SQL is the store's pool, for the store's own tests to set up and inspect rows directly
// (tests of other packages use storetest.SQL).
func (s *Store) SQL() *pgxpool.Pool { return s.pool }

// ExplainCallPage is PostgreSQL's plan (EXPLAIN, JSON) of the statement ListCalls runs for
// one page of f: for tests of which indexes the call list uses.
func (s *Store) ExplainCallPage(ctx context.Context, accountID int64, f CallFilter) (string, error) {
	args := callQueryArgs{accountID}
	where := callConditions(f, &args)
	var plan string
	err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+callRowsSQL(callPageSQL(where, f)), args...).Scan(&plan)
	return plan, err
}

// ExplainCallCount is PostgreSQL's plan (EXPLAIN, JSON) of the statement ListCalls runs to
// count the calls matching f when a page is full.
func (s *Store) ExplainCallCount(ctx context.Context, accountID int64, f CallFilter) (string, error) {
	args := callQueryArgs{accountID}
	where := callConditions(f, &args)
	countSQL, countArgs, _ := callCountSQL(accountID, f, where, args, false)
	var plan string
	err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+countSQL, countArgs...).Scan(&plan)
	return plan, err
}

// OnPool is a store on pool, for tests that need a pool of their own configuration.
func OnPool(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// QueueCallEvent queues the event of eventType about the call from its stored facts, as
// CompleteTranscriptSummary queues transcript.ready: for tests of the facts read back.
func (t *Tx) QueueCallEvent(ctx context.Context, links events.Links, eventType string, callID int64, sharedPage string,
	now time.Time) (queued bool, err error) {
	return queueCallEvent(ctx, t.tx, links, eventType, callID, sharedPage, now)
}
