package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeliveryMember is one replica's heartbeat row (see internal/webhook/fleet).
type DeliveryMember struct {
	ID                    string
	JoinedAt, HeartbeatAt time.Time
}

// BeatDeliveryMember writes the replica id's heartbeat at now (its row is created on the
// first), deletes the rows whose latest heartbeat is older than forget, and returns every
// member's row, its own included: one statement, one round trip.
func (s *Store) BeatDeliveryMember(ctx context.Context, id string, now time.Time, forget time.Duration) ([]DeliveryMember, error) {
	rows, err := s.pool.Query(ctx, `WITH beat AS (
			INSERT INTO delivery_members (id, joined_at, heartbeat_at) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at
			RETURNING id, joined_at, heartbeat_at),
		forgotten AS (DELETE FROM delivery_members WHERE heartbeat_at < $3 AND id <> $1)
		SELECT id, joined_at, heartbeat_at FROM beat
		UNION ALL
		SELECT id, joined_at, heartbeat_at FROM delivery_members WHERE id <> $1 AND heartbeat_at >= $3
		ORDER BY id`, id, now, now.Add(-forget))
	if err != nil {
		return nil, fmt.Errorf("delivery member heartbeat: %w", err)
	}
	members, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryMember, error) {
		var m DeliveryMember
		return m, r.Scan(&m.ID, &m.JoinedAt, &m.HeartbeatAt)
	})
	if err != nil {
		return nil, fmt.Errorf("delivery member heartbeat: %w", err)
	}
	return members, nil
}

// LeaveDeliveryMember deletes the replica's row (a clean shutdown: the others take its
// slots at their next heartbeat instead of after the TTL).
func (s *Store) LeaveDeliveryMember(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM delivery_members WHERE id = $1`, id); err != nil {
		return fmt.Errorf("leave the delivery members: %w", err)
	}
	return nil
}
