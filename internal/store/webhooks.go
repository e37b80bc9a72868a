package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// WebhookEvent is an outbox event as a delivery needs it.
type WebhookEvent struct {
	ID        uuid.UUID
	Type      string
	Body      []byte
	CreatedAt time.Time
}

// EventForDelivery reads the event a delivery sends and whether that delivery is already in
// the history. ErrNotFound when the event is gone (recorded still set). Calls made at the same
// time by several workers share one round trip (see batcher).
func (s *Store) EventForDelivery(ctx context.Context, id uuid.UUID, deliveryName string) (ev WebhookEvent, recorded bool, err error) {
	s.webhookBatchers()
	found, err := s.eventBatch.do(ctx, eventLookup{id: id, delivery: deliveryName})
	if err != nil {
		return WebhookEvent{ID: id}, false, err
	}
	if !found.exists {
		return WebhookEvent{ID: id}, found.recorded, ErrNotFound
	}
	return found.ev, found.recorded, nil
}

type eventLookup struct {
	id       uuid.UUID
	delivery string
}

type eventFound struct {
	ev       WebhookEvent
	exists   bool
	recorded bool
}

// historyLinger is how long a history row waits for others to share its statement. The
// receiver has its request by then, and the row is read only by listings of past deliveries:
// at 200 deliveries a second, 20 ms puts about five rows in a statement, and a delivery costs
// PostgreSQL a fifth less (docs/capacity.md). Under load batches fill before it ends.
const historyLinger = 20 * time.Millisecond

// webhookBatchers sets up the batched statements of webhook delivery: up to 200 calls a
// batch, two batches at a time of each kind.
func (s *Store) webhookBatchers() {
	s.webhookOnce.Do(func() {
		s.eventBatch = newBatcher(200, 2, s.eventsForDeliveries)
		s.historyBatch = newBatcher(200, 2, s.recordFinishedDeliveries).lingering(historyLinger, clock.RealClock{})
		s.markBatch = newBatcher(500, 1, s.markEventsDispatched)
	})
}

// eventsForDeliveries reads the events and history marks of several deliveries in one round trip.
func (s *Store) eventsForDeliveries(ctx context.Context, in []eventLookup) ([]eventFound, []error) {
	ids := make([]string, 0, len(in)) // text: an unnamed statement's parameters carry no type
	names := make([]string, len(in))
	seen := map[uuid.UUID]bool{}
	for i, l := range in {
		if !seen[l.id] {
			seen[l.id] = true
			ids = append(ids, l.id.String())
		}
		names[i] = l.delivery
	}
	fail := func(err error) ([]eventFound, []error) {
		errs := make([]error, len(in))
		for i := range errs {
			errs[i] = err
		}
		return nil, errs
	}
	// One statement, planned for its values on every call (an unnamed statement): both tables
	// start empty, and a cached generic plan made then is a sequential scan that stays until
	// the next automatic ANALYZE — at 500 deliveries a second, a minute of scanning a table
	// growing by tens of thousands of rows on every lookup.
	rows, err := s.pool.Query(ctx, `SELECT id, type, body, created_at, NULL::text FROM events WHERE id = ANY($1::uuid[])
		UNION ALL SELECT NULL, NULL, NULL, NULL, delivery_name FROM webhook_delivery_history WHERE delivery_name = ANY($2::text[])`,
		pgx.QueryExecModeExec, ids, names)
	if err != nil {
		return fail(err)
	}
	var (
		events   []WebhookEvent
		recorded []string
	)
	for rows.Next() {
		var (
			e    WebhookEvent
			id   *uuid.UUID
			typ  *string
			at   *time.Time
			name *string
		)
		if err := rows.Scan(&id, &typ, &e.Body, &at, &name); err != nil {
			rows.Close()
			return fail(err)
		}
		if name != nil {
			recorded = append(recorded, *name)
			continue
		}
		e.ID, e.Type, e.CreatedAt = *id, *typ, *at
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	byID := make(map[uuid.UUID]WebhookEvent, len(events))
	for _, e := range events {
		byID[e.ID] = e
	}
	done := make(map[string]bool, len(recorded))
	for _, n := range recorded {
		done[n] = true
	}
	out := make([]eventFound, len(in))
	for i, l := range in {
		e, ok := byID[l.id]
		out[i] = eventFound{ev: e, exists: ok, recorded: done[l.delivery]}
	}
	return out, nil
}

// FinishedDelivery is a row of the delivery history (webhook_delivery_history).
type FinishedDelivery struct {
	AccountPublicID  string
	EndpointPublicID string
	DeliveryName     string
	EventID          uuid.UUID
	EventType        string
	// Status is succeeded, failed or cancelled.
	Status       send.DeliveryStatus
	Attempts     int
	ResponseCode int
	LastError    string
	CreatedAt    time.Time
	FinishedAt   time.Time
	// DispatchesEvent, when set, is the outbox row of the delivery's event, marked dispatched
	// at FinishedAt in the same statement (the delivery is the event's last), and
	// DispatchesEventCreatedAt its created_at: the outbox's partition key, so the mark is
	// planned and run on that row's partition alone, not on each of a month's.
	DispatchesEvent          uuid.UUID
	DispatchesEventCreatedAt time.Time
}

// RecordFinishedDelivery writes a finished delivery to the history; writing the same
// delivery twice keeps the first row. It returns once the row is committed; calls made at the
// same time by several workers share one statement and one commit (see batcher).
func (s *Store) RecordFinishedDelivery(ctx context.Context, d FinishedDelivery) error {
	s.webhookBatchers()
	_, err := s.historyBatch.do(ctx, d)
	return err
}

// recordFinishedDeliveries inserts several history rows in one statement. Rows of an
// unknown account (removed meanwhile) are left out: there is no history to keep.
func (s *Store) recordFinishedDeliveries(ctx context.Context, ds []FinishedDelivery) ([]struct{}, []error) {
	n := len(ds)
	var (
		accounts, endpoints, names, types, statuses = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		eventIDs                                    = make([]string, n) // text, as above
		attempts                                    = make([]int32, n)
		codes                                       = make([]*int32, n)
		lastErrs                                    = make([]*string, n)
		created, finished                           = make([]time.Time, n), make([]time.Time, n)
	)
	var dispatched []string // text, as above
	var dispatchedCreated []time.Time
	var unknownPartition bool  // a row without its event's created_at: every partition is searched
	var dispatchedAt time.Time // the latest, as markEventsDispatched does
	for i, d := range ds {
		if d.DispatchesEvent != uuid.Nil {
			dispatched = append(dispatched, d.DispatchesEvent.String())
			dispatchedCreated = append(dispatchedCreated, d.DispatchesEventCreatedAt)
			unknownPartition = unknownPartition || d.DispatchesEventCreatedAt.IsZero()
			if d.FinishedAt.After(dispatchedAt) {
				dispatchedAt = d.FinishedAt
			}
		}
		accounts[i], endpoints[i], names[i], types[i], statuses[i] = d.AccountPublicID, d.EndpointPublicID, d.DeliveryName, d.EventType, string(d.Status)
		eventIDs[i], attempts[i], created[i], finished[i] = d.EventID.String(), int32(d.Attempts), d.CreatedAt, d.FinishedAt
		if d.ResponseCode != 0 {
			c := int32(d.ResponseCode)
			codes[i] = &c
		}
		if d.LastError != "" {
			e := d.LastError
			lastErrs[i] = &e
		}
	}
	// The events some of the rows finish are marked dispatched by the same statement: one
	// commit for both.
	_, err := s.pool.Exec(ctx, `WITH dispatched AS (
			UPDATE events SET dispatched_at = $13, claimed_until = NULL
			WHERE id = ANY ($12::uuid[]) AND (created_at = ANY ($14::timestamptz[]) OR $15))
		INSERT INTO webhook_delivery_history (account_id, endpoint_public_id, delivery_name, event_id,
			event_type, status, attempts, response_code, last_error, created_at, finished_at)
		SELECT a.id, r.endpoint, r.name, r.event_id, r.event_type, r.status, r.attempts, r.code, r.last_error, r.created_at, r.finished_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::int[], $8::int[], $9::text[],
			$10::timestamptz[], $11::timestamptz[]) WITH ORDINALITY
			AS r(account, endpoint, name, event_id, event_type, status, attempts, code, last_error, created_at, finished_at, ord)
		JOIN accounts a ON a.public_id = r.account
		ORDER BY r.ord
		ON CONFLICT DO NOTHING`, pgx.QueryExecModeExec, // planned per call, as above
		accounts, endpoints, names, eventIDs, types, statuses, attempts, codes, lastErrs, created, finished, dispatched, dispatchedAt,
		dispatchedCreated, unknownPartition)
	if err != nil {
		errs := make([]error, n)
		for i, d := range ds {
			errs[i] = fmt.Errorf("record delivery %s: %w", d.DeliveryName, err)
		}
		return nil, errs
	}
	return make([]struct{}, n), nil
}

// DeliveryHistory lists an endpoint's finished deliveries created since, newest first.
func (s *Store) DeliveryHistory(ctx context.Context, accountID int64, endpoint string, since time.Time, limit int) ([]FinishedDelivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT delivery_name, event_id, event_type, status, attempts, coalesce(response_code, 0),
			coalesce(last_error, ''), created_at, coalesce(finished_at, created_at)
		FROM webhook_delivery_history WHERE account_id = $1 AND endpoint_public_id = $2 AND created_at >= $3
		ORDER BY created_at DESC, id DESC LIMIT $4`, accountID, endpoint, since, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (FinishedDelivery, error) {
		d := FinishedDelivery{EndpointPublicID: endpoint}
		err := r.Scan(&d.DeliveryName, &d.EventID, &d.EventType, &d.Status, &d.Attempts, &d.ResponseCode, &d.LastError, &d.CreatedAt, &d.FinishedAt)
		return d, err
	})
}

// LatestFinishedDelivery is the newest history row of an event at an endpoint. ErrNotFound
// when there is none.
func (s *Store) LatestFinishedDelivery(ctx context.Context, accountID int64, endpoint string, eventID uuid.UUID) (FinishedDelivery, error) {
	d := FinishedDelivery{EndpointPublicID: endpoint, EventID: eventID}
	err := s.pool.QueryRow(ctx, `SELECT delivery_name, event_type, status, attempts, coalesce(response_code, 0),
			coalesce(last_error, ''), created_at, coalesce(finished_at, created_at)
		FROM webhook_delivery_history WHERE account_id = $1 AND endpoint_public_id = $2 AND event_id = $3
		ORDER BY coalesce(finished_at, created_at) DESC, id DESC LIMIT 1`, accountID, endpoint, eventID).Scan(
		&d.DeliveryName, &d.EventType, &d.Status, &d.Attempts, &d.ResponseCode, &d.LastError, &d.CreatedAt, &d.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, ErrNotFound
	}
	return d, err
}

// EventBody is the payload of the account's event eventID as the outbox keeps it (the body
// every delivery of it signs and posts). ErrNotFound when the account has no such event, or
// it is past the outbox's retention.
func (s *Store) EventBody(ctx context.Context, accountID int64, eventID uuid.UUID) ([]byte, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM events WHERE id = $1 AND account_id = $2`, eventID, accountID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return body, err
}

// ClaimSwitchOffNotice claims the right to email the owners about one switch-off episode of
// an endpoint. Only the first caller for (endpointUID, failingSince) gets true.
func (s *Store) ClaimSwitchOffNotice(ctx context.Context, accountPublicID, endpointUID, endpointName string, failingSince, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_switchoff_notices (endpoint_uid, failing_since, account_id, endpoint_name, claimed_at)
		SELECT $2, $3, a.id, $4, $5 FROM accounts a WHERE a.public_id = $1
		ON CONFLICT DO NOTHING`, accountPublicID, endpointUID, failingSince, endpointName, now)
	if err != nil {
		return false, fmt.Errorf("claim switch-off notice: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseSwitchOffNotice gives a claim back after the email could not be sent, so a later
// attempt sends it.
func (s *Store) ReleaseSwitchOffNotice(ctx context.Context, endpointUID string, failingSince time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM webhook_switchoff_notices WHERE endpoint_uid = $1 AND failing_since = $2`, endpointUID, failingSince)
	return err
}

// WebhookAccountLock serialises endpoint creation of one account (the five-endpoint limit)
// for the life of the returned transaction; call release when done.
func (s *Store) WebhookAccountLock(ctx context.Context, accountID int64) (release func(), err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhook-endpoints', $1))`, accountID); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }, nil
}

// EndpointsWritten is an account's last write to its webhook endpoints made through the API
// (table webhook_endpoint_writes): the dispatcher reads the account's endpoints from its
// watched cache once the cache has seen Version, and from kube-apiserver before then.
type EndpointsWritten struct {
	// Version is the resourceVersion kube-apiserver gave the write; 0: none recorded.
	Version uint64
	// Pending: a write is under way, or its version could not be recorded.
	Pending bool
}

// BeginEndpointWrite marks a write to the account's endpoints as under way, before it is
// made: until EndEndpointWrite records its version, the account's endpoints are read live.
func (s *Store) BeginEndpointWrite(ctx context.Context, accountPublicID string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_endpoint_writes (account_id, resource_version)
		SELECT id, NULL FROM accounts WHERE public_id = $1
		ON CONFLICT (account_id) DO UPDATE SET resource_version = NULL`, accountPublicID)
	if err != nil {
		return fmt.Errorf("mark an endpoint write under way: %w", err)
	}
	return nil
}

// EndEndpointWrite records version, the resourceVersion kube-apiserver gave a write to the
// account's endpoints. A version older than one recorded already is kept out (GREATEST
// passes over the NULL of a write under way).
func (s *Store) EndEndpointWrite(ctx context.Context, accountPublicID string, version uint64) error {
	if version == 0 || version > math.MaxInt64 {
		return fmt.Errorf("record an endpoint write: resourceVersion %d out of range", version)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_endpoint_writes AS w (account_id, resource_version)
		SELECT id, $2 FROM accounts WHERE public_id = $1
		ON CONFLICT (account_id) DO UPDATE SET resource_version = GREATEST(w.resource_version, EXCLUDED.resource_version)`,
		accountPublicID, int64(version))
	if err != nil {
		return fmt.Errorf("record an endpoint write: %w", err)
	}
	return nil
}
