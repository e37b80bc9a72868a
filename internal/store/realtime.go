package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// RealtimeChannel is the NOTIFY channel of the live channel's messages (migration 00017).
const RealtimeChannel = "switchboard_realtime"

// RealtimeGrant is a subscription /v1/realtime/auth allowed, with the key that allowed it.
type RealtimeGrant struct {
	KeyID     int64
	UserID    int64
	AccountID int64
}

// GrantRealtime records that the key keyID may subscribe socketID to channel.
func (s *Store) GrantRealtime(ctx context.Context, socketID, channel string, keyID int64, now time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO realtime_grants (socket_id, channel, key_id, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (socket_id, channel) DO UPDATE SET key_id = excluded.key_id, created_at = excluded.created_at`,
		socketID, channel, keyID, now)
	return err
}

// TakeRealtimeGrant consumes the grant of socketID for channel, if its key is still live (not
// revoked, its user still in the account). ErrNotFound otherwise.
func (s *Store) TakeRealtimeGrant(ctx context.Context, socketID, channel string) (RealtimeGrant, error) {
	var g RealtimeGrant
	err := s.pool.QueryRow(ctx, `DELETE FROM realtime_grants g USING api_keys k, users u
		WHERE g.socket_id = $1 AND g.channel = $2 AND k.id = g.key_id AND u.id = k.user_id
			AND k.revoked_at IS NULL AND u.left_at IS NULL
		RETURNING k.id, u.id, k.account_id`, socketID, channel).Scan(&g.KeyID, &g.UserID, &g.AccountID)
	return g, notFound(err)
}

// LiveRealtimeKeys returns those of keyIDs that are still live.
func (s *Store) LiveRealtimeKeys(ctx context.Context, keyIDs []int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT k.id FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.id = ANY($1) AND k.revoked_at IS NULL AND u.left_at IS NULL`, keyIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// RealtimeAccountGate is what the Integrations gate decides an account's live channel on.
type RealtimeAccountGate struct {
	AccountID            int64
	Plan                 string
	Addons               []string
	Status               string
	IntegrationsDisabled bool
}

// RealtimeAccountGates reads the gate's inputs of the accounts (those that exist).
func (s *Store) RealtimeAccountGates(ctx context.Context, accountIDs []int64) ([]RealtimeAccountGate, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, plan, addons, status, integrations_disabled FROM accounts WHERE id = ANY($1)`, accountIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (RealtimeAccountGate, error) {
		var g RealtimeAccountGate
		err := row.Scan(&g.AccountID, &g.Plan, &g.Addons, &g.Status, &g.IntegrationsDisabled)
		return g, err
	})
}

// PruneRealtimeGrants deletes grants never used since before.
func (s *Store) PruneRealtimeGrants(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM realtime_grants WHERE created_at < $1`, before)
	return tag.RowsAffected(), err
}

// OutboxEventBody reads an outbox event's body (for events too large to travel in a NOTIFY).
func (s *Store) OutboxEventBody(ctx context.Context, id string) (json.RawMessage, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM events WHERE id = $1`, id).Scan(&body)
	return body, notFound(err)
}

// CallProgress is a ringing or answered report of a call still in progress.
type CallProgress struct {
	AccountID   int64
	PlatformRef string
	State       string
	// Body builds the event from the call's public id (the one its final report will get).
	Body      func(callPublicID string) (json.RawMessage, error)
	CreatedAt time.Time
}

// ErrCallAlreadyReported: the call's final report came first; progress is no longer news.
var ErrCallAlreadyReported = errors.New("store: the call has already been reported")

// recordCallProgress stores a progress report once per call and state, inside tx; its trigger
// announces it on commit. duplicate is true when that state was already reported.
func recordCallProgress(ctx context.Context, tx pgx.Tx, in CallProgress) (callPublicID string, duplicate bool, err error) {
	// Serialise the reports of one call, so both states agree on the call's id.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('call_progress:' || $1::bigint || ':' || $2, 0))`,
		in.AccountID, in.PlatformRef); err != nil {
		return "", false, err
	}
	var done bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM calls WHERE account_id = $1 AND platform_ref = $2)`,
		in.AccountID, in.PlatformRef).Scan(&done); err != nil {
		return "", false, err
	}
	if done {
		return "", false, ErrCallAlreadyReported
	}
	var states []string
	err = tx.QueryRow(ctx, `SELECT coalesce(min(call_public_id), ''), coalesce(array_agg(state), '{}') FROM call_progress
		WHERE account_id = $1 AND platform_ref = $2`, in.AccountID, in.PlatformRef).Scan(&callPublicID, &states)
	if err != nil {
		return "", false, err
	}
	for _, s := range states {
		if s == in.State {
			return callPublicID, true, nil
		}
	}
	if callPublicID == "" {
		callPublicID = NewPublicID(PrefixCall)
	}
	body, err := in.Body(callPublicID)
	if err != nil {
		return "", false, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO call_progress (account_id, platform_ref, state, call_public_id, body, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, in.AccountID, in.PlatformRef, in.State, callPublicID, body, in.CreatedAt)
	return callPublicID, false, err
}

// ListenRealtime LISTENs on RealtimeChannel on a connection of its own to databaseURL until
// ctx ends or the connection is lost: ready runs once the LISTEN is in place, then each runs
// for every notification's payload, in order.
func ListenRealtime(ctx context.Context, databaseURL string, ready func() error, each func(payload []byte)) error {
	cfg, err := connConfig(databaseURL)
	if err != nil {
		return err
	}
	pg, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = pg.Close(context.Background()) }()
	if _, err := pg.Exec(ctx, "LISTEN "+RealtimeChannel); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	for {
		n, err := pg.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		each([]byte(n.Payload))
	}
}
