package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// CallProgressReport is a ringing or answered report of a call still in progress to the
// live number To.
type CallProgressReport struct {
	To          string
	PlatformRef string
	State       string
	CreatedAt   time.Time
	// Body builds the event from the call's number, its account and the call's public id
	// (the one its final report will get).
	Body func(ProgressCall) (json.RawMessage, error)
}

// ProgressCall is what a progress event says about the call.
type ProgressCall struct {
	Number       LiveNumber
	AccountName  string
	CallPublicID string
}

// ReportCallProgress stores a progress report once per call and state, in one transaction;
// its trigger announces it on commit. duplicate is true when that state was already reported.
// It answers ErrNotFound when no live number is To, and ErrCallAlreadyReported when the
// call's final report came first.
func (s *Store) ReportCallProgress(ctx context.Context, in CallProgressReport) (callPublicID string, duplicate bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		n, err := liveNumberByE164(ctx, tx, in.To)
		if err != nil {
			return err
		}
		var accountName string
		if err := tx.QueryRow(ctx, `SELECT name FROM accounts WHERE id = $1`, n.AccountID).Scan(&accountName); err != nil {
			return err
		}
		callPublicID, duplicate, err = recordCallProgress(ctx, tx, CallProgress{
			AccountID: n.AccountID, PlatformRef: in.PlatformRef, State: in.State, CreatedAt: in.CreatedAt,
			Body: func(callPublicID string) (json.RawMessage, error) {
				return in.Body(ProgressCall{Number: n, AccountName: accountName, CallPublicID: callPublicID})
			}})
		return err
	})
	return callPublicID, duplicate, err
}
