package store

import (
	"context"
	"fmt"
)

// FoldCallCounts moves up to max pending call-count deltas (the counts of calls reported by
// the ingestion path, migration 00080) into the count tables and returns how many it moved.
// Readers see the same figures before and after; folding keeps the pending rows few, so that
// reading them stays cheap. One fold runs at a time across replicas: a call while another is
// under way returns 0.
func (s *Store) FoldCallCounts(ctx context.Context, max int) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT call_counts_fold($1)`, max).Scan(&n); err != nil {
		return 0, fmt.Errorf("fold call counts: %w", err)
	}
	return n, nil
}

// PendingCallCounts is how many call-count deltas wait to be folded.
func (s *Store) PendingCallCounts(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM call_count_deltas`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending call counts: %w", err)
	}
	return n, nil
}
