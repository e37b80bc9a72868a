package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Recovery asks QueueRecovery to queue again an endpoint's deliveries that ended failed or
// cancelled.
type Recovery struct {
	AccountID        int64
	EndpointPublicID string
	// Since is the oldest delivery considered (by when it was made).
	Since time.Time
	// Now stamps the queued rows.
	Now time.Time
	// Busy are the endpoint's live WebhookDeliveries: an event with one under way is left
	// out. One whose name is the event's latest finished delivery is not under way: its
	// history row is written and only its removal is not seen yet (a reader's cache lags).
	Busy []LiveDelivery
	// Limit is the most deliveries one call queues.
	Limit int
	// Idempotency is the request's Idempotency-Key claim, committed with the resends (nil
	// without a key).
	Idempotency *IdempotencyClaim
}

// LiveDelivery is a WebhookDelivery resource: its event and name.
type LiveDelivery struct {
	EventID uuid.UUID
	Name    string
}

// QueueRecovery queues a fresh delivery (a resend: same event id and body, for this endpoint
// alone) of every event whose latest delivery to the endpoint since r.Since ended failed or
// cancelled, each event once, and returns how many it queued. An event with a resend still
// in the outbox, or in r.Busy, is left out, and calls for one endpoint take turns (an
// advisory lock), so a second call while the first's resends wait adds nothing twice.
func (s *Store) QueueRecovery(ctx context.Context, r Recovery) (int, error) {
	busyEvents, busyNames := make([]uuid.UUID, len(r.Busy)), make([]string, len(r.Busy))
	for i, b := range r.Busy {
		busyEvents[i], busyNames[i] = b.EventID, b.Name
	}
	var queued int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := commitIdempotencyClaim(ctx, tx, r.Idempotency); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhook-recover:' || $2::text, $1::bigint))`,
			r.AccountID, r.EndpointPublicID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, endpoint_public_id, resends, resend_of)
			SELECT gen_random_uuid(), e.account_id, e.type, e.body, $4, $2, e.id, latest.delivery_name
			FROM (SELECT DISTINCT ON (event_id) event_id, status, delivery_name FROM webhook_delivery_history
				WHERE account_id = $1 AND endpoint_public_id = $2 AND created_at >= $3
				ORDER BY event_id, created_at DESC, id DESC) latest
			JOIN events e ON e.id = latest.event_id AND e.account_id = $1
			WHERE latest.status IN ('failed', 'cancelled')
				AND NOT EXISTS (SELECT 1 FROM unnest($5::uuid[], $7::text[]) AS b(event_id, name)
					WHERE b.event_id = latest.event_id AND b.name <> latest.delivery_name)
				AND NOT EXISTS (SELECT 1 FROM events q WHERE q.account_id = $1 AND q.resends = latest.event_id
					AND q.endpoint_public_id = $2 AND q.dispatched_at IS NULL)
			ORDER BY e.created_at
			LIMIT $6`, r.AccountID, r.EndpointPublicID, r.Since, r.Now, busyEvents, r.Limit, busyNames)
		if err != nil {
			return err
		}
		queued = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue recovery of %s: %w", r.EndpointPublicID, err)
	}
	return queued, nil
}
