package store

import (
	"context"
	"time"
)

// HitRateLimit counts one request for subject in the fixed window starting at windowStart
// and returns the count including this one. The counter lives in PostgreSQL so that every
// API replica sees the same count.
func (s *Store) HitRateLimit(ctx context.Context, subject string, windowStart time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `INSERT INTO rate_limit_windows (subject, window_start, count) VALUES ($1, $2, 1)
		ON CONFLICT (subject, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
		RETURNING count`, subject, windowStart).Scan(&n)
	return n, err
}

// PruneRateLimits deletes windows that ended before cutoff.
func (s *Store) PruneRateLimits(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM rate_limit_windows WHERE window_start < $1`, cutoff)
	return tag.RowsAffected(), err
}
