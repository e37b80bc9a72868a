package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// DeliveryAttemptsTable keeps each attempt of a webhook delivery that needed more than one,
// partitioned and dropped with the retention window like the history (migration 00082).
const DeliveryAttemptsTable = "webhook_delivery_attempts"

// MaxAttemptBody bounds the part of an answer's body kept with an attempt.
const MaxAttemptBody = send.MaxBodyExcerpt

// DeliveryAttempt is one attempt of a delivery.
type DeliveryAttempt struct {
	AccountPublicID  string
	EndpointPublicID string
	DeliveryName     string
	EventID          uuid.UUID
	// Attempt is the delivery's count of attempts with this one (1: its first).
	Attempt int
	// SentAt is when the attempt was sent (the row's created_at, its partition key).
	SentAt time.Time
	// ResponseCode is 0 when no answer arrived; Error says why an attempt failed.
	ResponseCode int
	Error        string
	Duration     time.Duration
	// ResponseBody is the first MaxAttemptBody bytes of the answer's body.
	ResponseBody []byte
	// NextAttemptAt is when the retry after a failed attempt is due; nil when none follows.
	NextAttemptAt *time.Time
}

// RecordDeliveryAttempt writes one attempt. The same attempt written twice (the same
// delivery and time) keeps the first row; an attempt of an account removed meanwhile is
// not written.
func (s *Store) RecordDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error {
	var code *int32
	if a.ResponseCode != 0 {
		c := int32(a.ResponseCode)
		code = &c
	}
	body := a.ResponseBody
	if len(body) > MaxAttemptBody {
		body = body[:MaxAttemptBody]
	}
	if body == nil {
		body = []byte{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_delivery_attempts (account_id, endpoint_public_id, delivery_name, event_id,
			attempt, created_at, response_code, error, duration_ms, response_body, next_attempt_at)
		SELECT a.id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM accounts a WHERE a.public_id = $1
		ON CONFLICT DO NOTHING`,
		a.AccountPublicID, a.EndpointPublicID, a.DeliveryName, a.EventID, a.Attempt, a.SentAt, code, a.Error,
		a.Duration.Milliseconds(), body, a.NextAttemptAt)
	if err != nil {
		return fmt.Errorf("record attempt of delivery %s: %w", a.DeliveryName, err)
	}
	return nil
}

// DeliveryAttempts lists the attempts kept of the endpoint's deliveries names, each
// delivery's oldest first, sent at or after since (which spares the partitions before it).
func (s *Store) DeliveryAttempts(ctx context.Context, accountID int64, endpoint string, names []string, since time.Time) (map[string][]DeliveryAttempt, error) {
	out := map[string][]DeliveryAttempt{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT delivery_name, event_id, attempt, created_at, coalesce(response_code, 0), error,
			duration_ms, response_body, next_attempt_at
		FROM webhook_delivery_attempts
		WHERE account_id = $1 AND endpoint_public_id = $2 AND delivery_name = ANY($3::text[]) AND created_at >= $4
		ORDER BY delivery_name, created_at`, accountID, endpoint, names, since)
	if err != nil {
		return nil, fmt.Errorf("delivery attempts: %w", err)
	}
	as, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryAttempt, error) {
		a := DeliveryAttempt{EndpointPublicID: endpoint}
		var ms int64
		err := r.Scan(&a.DeliveryName, &a.EventID, &a.Attempt, &a.SentAt, &a.ResponseCode, &a.Error, &ms, &a.ResponseBody, &a.NextAttemptAt)
		a.Duration = time.Duration(ms) * time.Millisecond
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("delivery attempts: %w", err)
	}
	for _, a := range as {
		out[a.DeliveryName] = append(out[a.DeliveryName], a)
	}
	return out, nil
}
