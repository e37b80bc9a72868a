package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
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

// OnPool is a store on pool, for tests that need a pool of their own configuration.
func OnPool(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }
