package store

import (
	"context"
	"time"
)

// OutboxBacklog counts the outbox events not yet dispatched and the creation time of the
// oldest (zero when none waits), for the metrics endpoint. The partial index
// events_undispatched holds exactly these rows, so the count stays cheap while the backlog is small.
func (s *Store) OutboxBacklog(ctx context.Context) (waiting int64, oldest time.Time, err error) {
	var first *time.Time
	err = s.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM events WHERE dispatched_at IS NULL`).Scan(&waiting, &first)
	if first != nil {
		oldest = *first
	}
	return waiting, oldest, err
}
