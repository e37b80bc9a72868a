package store

import (
	"context"
)

// ExplainCallPage is PostgreSQL's plan (EXPLAIN, JSON) of the statement ListCalls runs for
// one page of f: for tests of which indexes the call list uses.
func (s *Store) ExplainCallPage(ctx context.Context, accountID int64, f CallFilter) (string, error) {
	args := callQueryArgs{accountID}
	where := callConditions(f, &args)
	var plan string
	err := s.Pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+callRowsSQL(callPageSQL(where, f)), args...).Scan(&plan)
	return plan, err
}
