package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Tx is a unit of work: the store operations called on it run in one PostgreSQL transaction,
// which Store.InTx commits when the work returns nil and rolls back otherwise. Callers outside
// the store see only these methods, never the transaction itself.
type Tx struct {
	tx pgx.Tx
}

// InTx runs fn as one unit of work, committing when it returns nil. Work done for a request
// with an Idempotency-Key commits the key's claim in it (Tx.CommitIdempotencyClaim).
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return fn(&Tx{tx: tx}) })
}

// inTx runs fn in a transaction, committing when it returns nil (see InTx).
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// EnqueueEvents stores evs in the outbox with one statement, in order. A call has at most one
// event of each type (call.ended, voicemail.received, transcript.ready): queued[i] is false
// when the call already had one of evs[i]'s type.
func (t *Tx) EnqueueEvents(ctx context.Context, evs []events.Event) (queued []bool, err error) {
	return enqueueEvents(ctx, t.tx, evs)
}

// EnqueueEventFor stores ev in the outbox for the account's endpoint endpointPublicID only
// (a test event): the dispatcher delivers it to that endpoint whatever its subscriptions.
func (t *Tx) EnqueueEventFor(ctx context.Context, ev events.Event, endpointPublicID string) error {
	return enqueueEventFor(ctx, t.tx, ev, endpointPublicID)
}

// EnqueueResend queues, in the outbox, a resend of the account's event eventID to the
// endpoint endpointPublicID alone: a row of its own (id outboxID) with the event's type and
// body, naming the delivery it repeats (resendOf). ErrNotFound when the account has no such
// event.
func (t *Tx) EnqueueResend(ctx context.Context, accountID int64, eventID uuid.UUID, endpointPublicID, resendOf string,
	outboxID uuid.UUID, now time.Time) error {
	return enqueueResend(ctx, t.tx, accountID, eventID, endpointPublicID, resendOf, outboxID, now)
}

// ApplyLedgerEntry changes the balance by amountPence (negative for a charge) and records it. The balance column and the ledger change together, so the balance always equals
// the sum of the ledger.
func (t *Tx) ApplyLedgerEntry(ctx context.Context, accountID int64, kind string, amountPence int64, note, reference string, at time.Time) (int64, error) {
	return applyLedgerEntry(ctx, t.tx, accountID, kind, amountPence, note, reference, at)
}

// PlatformNumberForUpdate locks and returns the number with this E.164: the live one, or else
// the one released last (so that repeating a release answers as the first time did).
func (t *Tx) PlatformNumberForUpdate(ctx context.Context, e164 string) (PlatformNumber, error) {
	return platformNumberForUpdate(ctx, t.tx, e164)
}

// PlatformNumberByID reads a number by its row id.
func (t *Tx) PlatformNumberByID(ctx context.Context, id int64) (PlatformNumber, error) {
	return platformNumberByID(ctx, t.tx, id)
}

// InsertPlatformNumber adds a number to an account and returns its row id. It answers
// ErrNumberLive when another live number has the same E.164.
func (t *Tx) InsertPlatformNumber(ctx context.Context, accountID int64, e164, status, ownership string, in NumberSettings) (int64, error) {
	return insertPlatformNumber(ctx, t.tx, accountID, e164, status, ownership, in)
}

// UpdateNumberSettings replaces a number's settings.
func (t *Tx) UpdateNumberSettings(ctx context.Context, n PlatformNumber, in NumberSettings) error {
	return updateNumberSettings(ctx, t.tx, n, in)
}

// SetNumberState changes a number's status, ownership and release time.
func (t *Tx) SetNumberState(ctx context.Context, id int64, status, ownership string, releaseAt *time.Time) error {
	return setNumberState(ctx, t.tx, id, status, ownership, releaseAt)
}

// ReplaceNumberRoutes replaces all of a number's routes (default, schedules in order, override).
func (t *Tx) ReplaceNumberRoutes(ctx context.Context, numberID int64, routes []NumberRoute) error {
	return replaceNumberRoutes(ctx, t.tx, numberID, routes)
}

// LiveNumberByE164 finds the live (not released) number with this E.164 address.
func (t *Tx) LiveNumberByE164(ctx context.Context, e164 string) (LiveNumber, error) {
	return liveNumberByE164(ctx, t.tx, e164)
}
