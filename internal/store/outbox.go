package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// The outbox: events queued in the transaction of the change that caused them, then claimed
// by the webhook dispatcher, fanned out with no transaction open, and marked dispatched.

// callEventFacts reads what the events of the call with internal id callID say about it, in
// q (the transaction that recorded the change). ErrNotFound when the call does not exist.
func callEventFacts(ctx context.Context, q pgx.Tx, callID int64) (events.CallFacts, error) {
	f := events.CallFacts{CallID: callID}
	var (
		numberE164, numberLabel *string
		recordingID             *string
		summary                 *string
		s                       events.SummaryFacts
	)
	err := q.QueryRow(ctx, `SELECT c.account_id, a.name, c.public_id, c.direction, c.from_e164, c.to_e164, c.started_at,
			c.ended_at, c.duration_seconds, c.talk_seconds, c.disposition, n.e164, n.label,
			c.answered_by_staff, c.answered_department, c.answer_target_type, c.answer_target_label,
			r.public_id, t.summary, t.intent, t.sentiment, t.urgency, t.action_items, t.callback_number
		FROM calls c
		JOIN accounts a ON a.id = c.account_id
		LEFT JOIN numbers n ON n.id = c.number_id
		LEFT JOIN LATERAL (SELECT id, public_id FROM recordings
			WHERE call_id = c.id AND kind IN ('call', 'voicemail') AND deleted_at IS NULL ORDER BY id LIMIT 1) r ON true
		LEFT JOIN transcripts t ON t.recording_id = r.id AND t.summary_status = 'completed'
		WHERE c.id = $1`, callID).Scan(
		&f.AccountID, &f.AccountName, &f.Call.ID, &f.Call.Direction, &f.Call.From, &f.Call.To, &f.Call.StartedAt,
		&f.Call.EndedAt, &f.Call.DurationSeconds, &f.Call.TalkSeconds, &f.Call.Disposition, &numberE164, &numberLabel,
		&f.Answer.StaffMember, &f.Answer.Department, &f.Answer.TargetType, &f.Answer.TargetLabel,
		&recordingID, &summary, &s.Intent, &s.Sentiment, &s.Urgency, &s.ActionItems, &s.CallbackNumber)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, ErrNotFound
	}
	if err != nil {
		return f, fmt.Errorf("read call %d for its events: %w", callID, err)
	}
	if numberE164 != nil {
		f.Number = &events.PayloadNumber{E164: *numberE164}
		if numberLabel != nil {
			f.Number.Label = *numberLabel
		}
	}
	if recordingID != nil {
		f.RecordingPublicID = *recordingID
	}
	if summary != nil {
		s.Summary = *summary
		f.Summary = &s
	}
	return f, nil
}

// queueCallEvent builds the event of eventType about the call from its stored facts and
// queues it in tx. queued is false when the call already has that event (see enqueueEvent).
func queueCallEvent(ctx context.Context, tx pgx.Tx, links events.Links, eventType string, callID int64, sharedPage string,
	now time.Time) (queued bool, err error) {
	facts, err := callEventFacts(ctx, tx, callID)
	if err != nil {
		return false, err
	}
	ev, err := events.ForCall(links, eventType, facts, sharedPage, now)
	if err != nil {
		return false, err
	}
	return enqueueEvent(ctx, tx, ev)
}

// enqueueEvent stores ev in the outbox. An event a call already has of the same type
// (call.ended, voicemail.received, transcript.ready: once per call) is not stored again:
// queued is false.
func enqueueEvent(ctx context.Context, tx pgx.Tx, ev events.Event) (queued bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, type, body, call_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, ev.ID, ev.AccountID, ev.Type, ev.Body, ev.CallID, ev.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("queue %s event: %w", ev.Type, err)
	}
	return tag.RowsAffected() == 1, nil
}

// EnqueueEventFor stores ev in the outbox for the account's endpoint endpointPublicID only
// (a test event): the dispatcher delivers it to that endpoint whatever its subscriptions.
func enqueueEventFor(ctx context.Context, tx pgx.Tx, ev events.Event, endpointPublicID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, type, body, call_id, created_at, endpoint_public_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ev.ID, ev.AccountID, ev.Type, ev.Body, ev.CallID, ev.CreatedAt, endpointPublicID)
	if err != nil {
		return fmt.Errorf("queue %s event for %s: %w", ev.Type, endpointPublicID, err)
	}
	return nil
}

// EnqueueResend queues, in the outbox, a resend of the account's event eventID to the
// endpoint endpointPublicID alone: a row of its own (id outboxID) with the event's type and
// body, naming the delivery it repeats (resendOf). ErrNotFound when the account has no such
// event.
func enqueueResend(ctx context.Context, tx pgx.Tx, accountID int64, eventID uuid.UUID, endpointPublicID, resendOf string,
	outboxID uuid.UUID, now time.Time) error {
	tag, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, endpoint_public_id, resends, resend_of)
		SELECT $1, account_id, type, body, $2, $3, id, $4 FROM events WHERE id = $5 AND account_id = $6`,
		outboxID, now, endpointPublicID, resendOf, eventID, accountID)
	if err != nil {
		return fmt.Errorf("queue resend of event %s to %s: %w", eventID, endpointPublicID, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// QueuedDelivery is a delivery to one endpoint still in the outbox (not made yet, or its
// first attempt under way), or deferred until there is room for its resource.
type QueuedDelivery struct {
	// OutboxID is the outbox row's id; EventID the event's (they differ for a resend).
	OutboxID  uuid.UUID
	EventID   uuid.UUID
	Type      string
	Resend    bool
	CreatedAt time.Time
}

// QueuedFilter selects the undispatched outbox rows QueuedDeliveriesFor lists.
type QueuedFilter struct {
	// EndpointPublicID is the endpoint: rows queued for it alone (a test event, a resend).
	EndpointPublicID string
	// Subscribed are the event types it subscribes to: events of these types queued for
	// every subscribed endpoint are listed too (none when empty, e.g. a paused endpoint).
	Subscribed []string
	// EventID, when set, lists the deliveries of that event only.
	EventID uuid.UUID
	// Since is the oldest row listed; Limit the most rows (newest first).
	Since time.Time
	Limit int
}

// QueuedDeliveriesFor lists the account's undispatched outbox rows that go to
// f.EndpointPublicID, newest first: deliveries the dispatcher has not made yet, or has
// claimed and is still making (an event stays undispatched until all its deliveries are
// recorded, so an engine's first attempt in flight is listed here until its history row).
// Its deferred deliveries (waiting for room to become resources) are listed too.
func (s *Store) QueuedDeliveriesFor(ctx context.Context, accountID int64, f QueuedFilter) ([]QueuedDelivery, error) {
	if f.Subscribed == nil {
		f.Subscribed = []string{}
	}
	var eventID *uuid.UUID
	if f.EventID != uuid.Nil {
		eventID = &f.EventID
	}
	rows, err := s.pool.Query(ctx, `(SELECT id, COALESCE(resends, id) AS event_id, type, resends IS NOT NULL, created_at FROM events
		WHERE account_id = $1 AND dispatched_at IS NULL AND created_at >= $3
			AND (endpoint_public_id = $2 OR (endpoint_public_id IS NULL AND type = ANY($4::text[])))
			AND ($5::uuid IS NULL OR COALESCE(resends, id) = $5))
		UNION ALL
		(SELECT outbox_id, event_id, event_type, resend_of <> '', event_created_at FROM webhook_deferred_deliveries
		WHERE account_id = $1 AND endpoint_public_id = $2 AND event_created_at >= $3 AND ($5::uuid IS NULL OR event_id = $5))
		ORDER BY created_at DESC, id LIMIT $6`, accountID, f.EndpointPublicID, f.Since, f.Subscribed, eventID, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("queued deliveries to %s: %w", f.EndpointPublicID, err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueuedDelivery, error) {
		var q QueuedDelivery
		return q, r.Scan(&q.OutboxID, &q.EventID, &q.Type, &q.Resend, &q.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("queued deliveries to %s: %w", f.EndpointPublicID, err)
	}
	return qs, nil
}

// PendingEvent is an undispatched outbox event.
type PendingEvent struct {
	// ID is the event's id; OutboxID the outbox row's (they differ for a resend).
	ID       uuid.UUID
	OutboxID uuid.UUID
	Type     string
	// AccountID is the account's internal id; AccountPublicID its public one.
	AccountID       int64
	AccountPublicID string
	// EndpointPublicID is the one endpoint the event is for (a test event); "": every
	// endpoint of the account that subscribes to Type.
	EndpointPublicID string
	// ResendOf names the delivery a resend repeats ("": not a resend).
	ResendOf string
	// Body is the exact JSON every attempt sends (the engine makes first attempts from it).
	Body      []byte
	CreatedAt time.Time
	// Repeat: the event was claimed before (that claim expired or was released), so some of
	// its deliveries may have been made already.
	Repeat bool
	// EndpointsWritten is the account's last write to its endpoints through the API, as it
	// stood at the claim.
	EndpointsWritten EndpointsWritten
}

// ClaimEvents claims up to limit undispatched events, shared among the accounts that have
// some (see ClaimFairly, with no account held back).
func (s *Store) ClaimEvents(ctx context.Context, limit int, now time.Time, lease time.Duration) ([]PendingEvent, error) {
	c, err := s.ClaimFairly(ctx, FairClaim{Limit: limit}, now, lease)
	return c.Events, err
}

// FairClaim is what one claim of outbox events may take.
type FairClaim struct {
	// Limit bounds the events claimed.
	Limit int
	// Allowance bounds the events claimed of the accounts it names (by internal id); 0 takes
	// none of theirs. Accounts it does not name may take up to PerAccount (0: Limit).
	Allowance  map[int64]int
	PerAccount int
	// After resumes the scan of accounts past this account id (0: from the first); Accounts
	// bounds the accounts one claim looks at (default DefaultClaimAccounts).
	After    int64
	Accounts int
}

// claimFloor is how far back in created_at a claim looks for undispatched events, so that it
// reads the outbox partitions that can hold one and not each of a month's (a claim's skip scan
// descends every partition's index at each step). It is an hour before the oldest undispatched
// event (or now, when there is none), to the hour below, found again every claimFloorCheck.
// An event queued with a created_at older than that (none of the writers does so) waits until
// the next check.
type claimFloor struct {
	mu      sync.Mutex
	floor   time.Time
	checked time.Time
	// claimSQL is the claim's statement for claimSQLFloor (fairClaimSQL with it written in).
	claimSQL      string
	claimSQLFloor time.Time
}

const (
	claimFloorCheck  = 30 * time.Second
	claimFloorMargin = time.Hour
)

// statement is the claim's statement at now, with its floor written in.
func (f *claimFloor) statement(ctx context.Context, db *pgxpool.Pool, now time.Time) (string, error) {
	floor, err := f.at(ctx, db, now)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimSQL == "" || !f.claimSQLFloor.Equal(floor) {
		f.claimSQL = strings.ReplaceAll(fairClaimSQL, "{floor}", "'"+floor.UTC().Format(time.RFC3339)+"'::timestamptz")
		f.claimSQLFloor = floor
	}
	return f.claimSQL, nil
}

// at is the floor for a claim at now.
func (f *claimFloor) at(ctx context.Context, db *pgxpool.Pool, now time.Time) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.checked.IsZero() && now.Sub(f.checked) < claimFloorCheck && now.Sub(f.checked) >= 0 {
		return f.floor, nil
	}
	var oldest *time.Time
	if err := db.QueryRow(ctx, `SELECT min(created_at) FROM events WHERE dispatched_at IS NULL`).Scan(&oldest); err != nil {
		return time.Time{}, fmt.Errorf("find the oldest undispatched event: %w", err)
	}
	f.floor, f.checked = claimFloorFor(oldest, now).Truncate(time.Hour), now
	return f.floor, nil
}

// claimFloorFor is the floor given the oldest undispatched event's created_at (nil: none).
func claimFloorFor(oldest *time.Time, now time.Time) time.Time {
	from := now
	if oldest != nil && oldest.Before(now) {
		from = *oldest
	}
	return from.Add(-claimFloorMargin)
}

// DefaultClaimAccounts is how many accounts with events waiting one claim looks at.
const DefaultClaimAccounts = 64

// fairClaimSQL is ClaimFairly's statement. The floor is in its text, not a parameter:
// PostgreSQL then prunes the partitions before it plans, and keeps the generic plan (a
// parameter would have it make a custom plan, pruned, on every claim). The text changes when
// the floor moves, at most once an hour.
const fairClaimSQL = `WITH RECURSIVE found(account_id, n) AS (
		(SELECT account_id, 1 FROM events WHERE dispatched_at IS NULL AND account_id > $4 AND created_at >= {floor}
			ORDER BY account_id LIMIT 1)
		UNION ALL
		SELECT (SELECT e.account_id FROM events e WHERE e.dispatched_at IS NULL AND e.account_id > f.account_id
			AND e.created_at >= {floor} ORDER BY e.account_id LIMIT 1), f.n + 1
		FROM found f WHERE f.account_id IS NOT NULL AND f.n < $5),
	scan AS (SELECT COALESCE(max(account_id), 0) AS last, count(account_id) AS n FROM found),
	allow AS (
		SELECT f.account_id, COALESCE(a.n, $8) AS n FROM found f
		LEFT JOIN unnest($6::bigint[], $7::int[]) AS a(account_id, n) ON a.account_id = f.account_id
		WHERE f.account_id IS NOT NULL),
	share AS (SELECT GREATEST(1, CEIL($1::float8 / GREATEST(count(*) FILTER (WHERE n > 0), 1)))::int AS n FROM allow),
	picked AS (
		SELECT x.id, x.account_id, x.created_at FROM allow, share, LATERAL (
			SELECT e.id, e.account_id, e.created_at FROM events e
			WHERE e.account_id = allow.account_id AND e.dispatched_at IS NULL AND (e.claimed_until IS NULL OR e.claimed_until <= $2)
				AND e.created_at >= {floor}
			ORDER BY e.created_at, e.id LIMIT LEAST(allow.n, share.n) FOR UPDATE SKIP LOCKED) x
		WHERE allow.n > 0),
	claim AS (
		SELECT id, account_id, count(*) OVER (PARTITION BY account_id) AS taken FROM (
			SELECT id, account_id, created_at, row_number() OVER (PARTITION BY account_id ORDER BY created_at, id) AS rn FROM picked) r
		ORDER BY rn, created_at, id LIMIT $1),
	claimed AS (
		UPDATE events e SET claimed_until = $3, claims = e.claims + 1
		FROM claim, share, allow, accounts a LEFT JOIN webhook_endpoint_writes w ON w.account_id = a.id
		WHERE e.id = claim.id AND e.created_at >= {floor} AND a.id = e.account_id AND allow.account_id = e.account_id
		RETURNING e.id, COALESCE(e.resends, e.id) AS event_id, e.type, a.id AS account_id, a.public_id, e.body, e.created_at,
			e.claims > 1 AS repeat, COALESCE(e.endpoint_public_id, '') AS endpoint_public_id, COALESCE(e.resend_of, '') AS resend_of,
			COALESCE(w.resource_version, 0) AS version, w.account_id IS NOT NULL AND w.resource_version IS NULL AS pending,
			claim.taken >= share.n AND share.n < allow.n AS full)
	-- The scan's end comes back even when nothing was claimed (every account it found held back).
	SELECT scan.last, scan.n, c.id, c.event_id, c.type, c.account_id, c.public_id, c.body, c.created_at, c.repeat,
		c.endpoint_public_id, c.resend_of, c.version, c.pending, c.full
	FROM scan LEFT JOIN claimed c ON true`

// ClaimedEvents is what a claim took, and where the next one should look.
type ClaimedEvents struct {
	Events []PendingEvent
	// Next is FairClaim.After for the next claim: past the last account this claim looked at
	// when it could not look at them all, else 0.
	Next int64
	// More: some account had more events waiting than its share of this claim.
	More bool
}

// ClaimFairly claims up to c.Limit undispatched events that no live claim holds, until
// now+lease, and commits the claim before it returns: the caller fans them out with no
// transaction open, then calls MarkEventsDispatched (or ReleaseEvents). Rows another claimer
// is taking at the same moment are skipped (FOR UPDATE SKIP LOCKED). A claim that is neither
// marked nor released (the claimer stopped) ends with its lease, and the events are claimed
// again.
//
// The claim is fair between accounts: it looks at up to c.Accounts accounts with events
// waiting (in account order, from c.After, so that with more of them waiting successive claims
// go round them all), gives each an equal share of c.Limit (within its allowance), and takes
// each account's oldest events first; when the shares exceed c.Limit, every account's first
// event is taken before any account's second, and so on. One account's backlog never holds
// back another's events, and each account's events are claimed in the order they were
// queued.
func (s *Store) ClaimFairly(ctx context.Context, c FairClaim, now time.Time, lease time.Duration) (ClaimedEvents, error) {
	if c.Accounts <= 0 {
		c.Accounts = DefaultClaimAccounts
	}
	if c.PerAccount <= 0 || c.PerAccount > c.Limit {
		c.PerAccount = c.Limit
	}
	claimSQL, err := s.claimFloor.statement(ctx, s.pool, now)
	if err != nil {
		return ClaimedEvents{}, err
	}
	allowIDs := make([]int64, 0, len(c.Allowance))
	allowN := make([]int32, 0, len(c.Allowance))
	for id, n := range c.Allowance {
		allowIDs = append(allowIDs, id)
		allowN = append(allowN, int32(max(0, min(n, c.Limit))))
	}
	rows, err := s.pool.Query(ctx, claimSQL,
		c.Limit, now, now.Add(lease), c.After, c.Accounts, allowIDs, allowN, c.PerAccount)
	if err != nil {
		return ClaimedEvents{}, fmt.Errorf("claim outbox events: %w", err)
	}
	defer rows.Close()
	var (
		last, looked int64
		more         bool
		evs          []PendingEvent
	)
	for rows.Next() {
		// One row with only the scan's end when nothing was claimed.
		var (
			outboxID, eventID                 *uuid.UUID
			typ, accountPublicID, endpoint    *string
			resendOf                          *string
			accountID, version                *int64
			body                              []byte
			createdAt                         *time.Time
			repeat, pendingWrite, accountFull *bool
		)
		if err := rows.Scan(&last, &looked, &outboxID, &eventID, &typ, &accountID, &accountPublicID, &body, &createdAt, &repeat,
			&endpoint, &resendOf, &version, &pendingWrite, &accountFull); err != nil {
			return ClaimedEvents{}, fmt.Errorf("claim outbox events: %w", err)
		}
		if outboxID == nil {
			continue
		}
		evs = append(evs, PendingEvent{OutboxID: *outboxID, ID: *eventID, Type: *typ, AccountID: *accountID,
			AccountPublicID: *accountPublicID, Body: body, CreatedAt: *createdAt, Repeat: *repeat, EndpointPublicID: *endpoint,
			ResendOf: *resendOf, EndpointsWritten: EndpointsWritten{Version: uint64(*version), Pending: *pendingWrite}})
		more = more || *accountFull
	}
	if err := rows.Err(); err != nil {
		return ClaimedEvents{}, fmt.Errorf("claim outbox events: %w", err)
	}
	// RETURNING keeps no order; fan out oldest first.
	slices.SortFunc(evs, func(a, b PendingEvent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return slices.Compare(a.OutboxID[:], b.OutboxID[:])
	})
	out := ClaimedEvents{Events: evs, More: more}
	if looked >= int64(c.Accounts) {
		out.Next = last
	}
	return out, nil
}

// DeliverySalt tells a resend's delivery name from the first delivery's (see
// send.DeliveryName): the same on every claim of the row.
func (e PendingEvent) DeliverySalt() string {
	if e.ResendOf == "" {
		return ""
	}
	return "resend-" + e.OutboxID.String()
}

// MarkEventsDispatched marks claimed events dispatched at `at`; they are never claimed again.
func (s *Store) MarkEventsDispatched(ctx context.Context, ids []uuid.UUID, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE events SET dispatched_at = $2, claimed_until = NULL WHERE id = ANY($1)`, ids, at); err != nil {
		return fmt.Errorf("mark %d events dispatched: %w", len(ids), err)
	}
	return nil
}

// MarkEventDispatched marks one claimed event dispatched once its deliveries are all
// recorded; calls made at the same time by the engine's workers share one statement and one
// commit (see batcher).
func (s *Store) MarkEventDispatched(ctx context.Context, id uuid.UUID, at time.Time) error {
	s.webhookBatchers()
	_, err := s.markBatch.do(ctx, eventMark{id: id, at: at})
	return err
}

type eventMark struct {
	id uuid.UUID
	at time.Time
}

func (s *Store) markEventsDispatched(ctx context.Context, marks []eventMark) ([]struct{}, []error) {
	ids := make([]uuid.UUID, len(marks))
	at := marks[0].at
	for i, m := range marks {
		ids[i] = m.id
		if m.at.After(at) {
			at = m.at
		}
	}
	err := s.MarkEventsDispatched(ctx, ids, at)
	errs := make([]error, len(marks))
	for i := range errs {
		errs[i] = err
	}
	return make([]struct{}, len(marks)), errs
}

// RenewEventClaims extends to until the claims still held on events: not dispatched, not
// released. A released event stays free, so a renewal racing a release cannot hold it back.
func (s *Store) RenewEventClaims(ctx context.Context, ids []uuid.UUID, until time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE events SET claimed_until = $2
		WHERE id = ANY($1) AND dispatched_at IS NULL AND claimed_until IS NOT NULL`, ids, until); err != nil {
		return fmt.Errorf("renew the claims on %d events: %w", len(ids), err)
	}
	return nil
}

// ReleaseEvents ends the claim on events whose fan-out failed, so the next pass takes them
// without waiting for the lease.
func (s *Store) ReleaseEvents(ctx context.Context, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE events SET claimed_until = NULL WHERE id = ANY($1) AND dispatched_at IS NULL`, ids); err != nil {
		return fmt.Errorf("release %d events: %w", len(ids), err)
	}
	return nil
}
