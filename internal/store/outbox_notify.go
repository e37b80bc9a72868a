package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutboxChannel is the NOTIFY channel on which a commit that queues outbox events announces
// them (migration 00045); the payload is empty.
const OutboxChannel = "switchboard_outbox"

// ListenOutbox calls queued after each commit that queued outbox events, and once as soon as
// it listens (events committed before were not announced to it), until ctx ends or the
// connection is lost; it returns that error (nil when ctx ended). It holds a connection of
// its own, outside the pool, for as long as it runs. queued must not block for long: the
// notifications wait meanwhile.
func (s *Store) ListenOutbox(ctx context.Context, queued func()) error {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // a lost listener connection says nothing about the pool's
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect the outbox listener: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+OutboxChannel); err != nil {
		return fmt.Errorf("listen for queued outbox events: %w", err)
	}
	queued()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for queued outbox events: %w", err)
		}
		queued()
	}
}
