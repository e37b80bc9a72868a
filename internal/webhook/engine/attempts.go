package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// KeepsAttempt is whether an attempt gets a row of its own (store.DeliveryAttempt): every
// attempt of a delivery that needs more than one. A first attempt that succeeds writes none,
// so the common case costs no write beyond its history row, which says all there is.
func KeepsAttempt(attempt int, ok bool) bool { return attempt > 1 || !ok }

// AttemptRecord is an attempt of a delivery, for RecordAttempt.
type AttemptRecord struct {
	AccountPublicID, EndpointPublicID, DeliveryName string
	EventID                                         uuid.UUID
	// Attempt is the delivery's count of attempts with this one.
	Attempt int
	Out     Attempted
	// NextAttemptAt is when the retry after it is due; nil when none follows.
	NextAttemptAt *time.Time
}

// RecordAttempt writes the attempt when KeepsAttempt says so. It is called after the
// attempt's answer is in, with no transaction open across the send.
func (e *Engine) RecordAttempt(ctx context.Context, a AttemptRecord) error {
	if !KeepsAttempt(a.Attempt, a.Out.Result.OK) {
		return nil
	}
	return e.Store.RecordDeliveryAttempt(ctx, store.DeliveryAttempt{AccountPublicID: a.AccountPublicID,
		EndpointPublicID: a.EndpointPublicID, DeliveryName: a.DeliveryName, EventID: a.EventID, Attempt: a.Attempt,
		SentAt: a.Out.SentAt, ResponseCode: a.Out.Result.StatusCode, Error: Truncate(a.Out.Result.Error, MaxErrorLen),
		Duration: a.Out.Duration, ResponseBody: a.Out.Result.Body, NextAttemptAt: a.NextAttemptAt})
}
