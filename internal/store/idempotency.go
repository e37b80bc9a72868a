package store

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Idempotency keys (Stripe's semantics; the HTTP side is apiserver/idempotency.go).
//
// A request with a key first claims the key in its own committed statement (state running,
// with a lease), so a repeat while it runs is told so at once instead of waiting on a lock.
// The claim then travels in the request's context: every transaction begun through InTx
// while the request runs sets the key's state to committed inside that same transaction.
// So the state says "the work happened" exactly when the PostgreSQL work committed; a crash
// after the claim but before the work leaves a running key whose lease runs out, and a
// repeat then does the work (once). The answer is saved after the handler returns. Work
// outside PostgreSQL (kube-apiserver) has no transaction to join: its key stays running until
// the answer is saved, so a crash between the two lets a repeat after the lease do it again.
//
// This shape was chosen over running the whole handler in one transaction held in the
// context: that would need every store method (and the transcription job queue, which reads
// the charge from another connection) to use the context's transaction, and handlers that
// read through the pool after a write would not see it or would wait on its locks.

// IdempotencyState is a key's state (see the migration 00016).
type IdempotencyState string

const (
	IdempotencyRunning   IdempotencyState = "running"
	IdempotencyCommitted IdempotencyState = "committed"
	IdempotencyCompleted IdempotencyState = "completed"
)

// IdempotencyRequest is what a key is claimed for.
type IdempotencyRequest struct {
	AccountID int64
	Key       string
	// Route is the method and route template, e.g. "POST /v1/contacts".
	Route      string
	BodySHA256 []byte
}

// SavedResponse is an answer kept for replay.
type SavedResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// ClaimOutcome is what ClaimIdempotencyKey found.
type ClaimOutcome int

const (
	// ClaimGranted: the request is the key's owner and must do the work.
	ClaimGranted ClaimOutcome = iota
	// ClaimReplay: the key's answer is saved; Response holds it.
	ClaimReplay
	// ClaimOtherRoute: the key was used with another method or route.
	ClaimOtherRoute
	// ClaimOtherBody: the key was used on this route with another body.
	ClaimOtherBody
	// ClaimInFlight: another request with the key is running.
	ClaimInFlight
	// ClaimUnanswered: a request with the key committed its work but its answer was not
	// saved (it failed after the work, or the process stopped); the work is not done again.
	ClaimUnanswered
)

// IdempotencyClaim is a granted claim; carried in the request's context.
type IdempotencyClaim struct {
	AccountID int64
	Key       string
	Token     uuid.UUID
	// lost is set when a transaction found the claim taken over (its lease ran out).
	lost atomic.Bool
}

// Lost reports whether a transaction of the request found the claim taken over.
func (c *IdempotencyClaim) Lost() bool { return c.lost.Load() }

// ClaimResult is ClaimIdempotencyKey's answer.
type ClaimResult struct {
	Outcome  ClaimOutcome
	Claim    *IdempotencyClaim // ClaimGranted only
	Response SavedResponse     // ClaimReplay only
}

// ErrIdempotencyClaimLost aborts a transaction whose request no longer owns its key.
var ErrIdempotencyClaimLost = errors.New("idempotency key claimed by another request")

type idempotencyClaimKey struct{}

// WithIdempotencyClaim returns ctx carrying c: transactions begun through InTx with it mark
// the key committed.
func WithIdempotencyClaim(ctx context.Context, c *IdempotencyClaim) context.Context {
	return context.WithValue(ctx, idempotencyClaimKey{}, c)
}

func idempotencyClaimFrom(ctx context.Context) *IdempotencyClaim {
	c, _ := ctx.Value(idempotencyClaimKey{}).(*IdempotencyClaim)
	return c
}

// sweepBatch bounds the expired keys one claim deletes.
const sweepBatch = 100

// ClaimIdempotencyKey claims req's key for a request running from now: the key is new or
// expired (kept for keep), or its running owner's lease ran out; lease is how long the new
// owner has before a repeat may take the key over. Otherwise it reports what the key holds.
// It also deletes a few expired keys of any account (the sweep: keys are only ever read by
// a claim, which ignores expired ones, so sweeping opportunistically is enough).
func (s *Store) ClaimIdempotencyKey(ctx context.Context, req IdempotencyRequest, now time.Time, lease, keep time.Duration) (ClaimResult, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
			SELECT account_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		now, sweepBatch); err != nil {
		return ClaimResult{}, err
	}
	token := uuid.New()
	for range 3 {
		tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys
				(account_id, key, route, body_sha256, state, token, locked_until, created_at, expires_at)
			VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8)
			ON CONFLICT (account_id, key) DO UPDATE SET route = excluded.route, body_sha256 = excluded.body_sha256,
				state = 'running', token = excluded.token, locked_until = excluded.locked_until,
				status = NULL, header = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_keys.expires_at <= $7`,
			req.AccountID, req.Key, req.Route, req.BodySHA256, token, now.Add(lease), now, now.Add(keep))
		if err != nil {
			return ClaimResult{}, err
		}
		if tag.RowsAffected() == 1 {
			return granted(req, token), nil
		}
		var (
			route       string
			bodySHA     []byte
			state       IdempotencyState
			lockedUntil time.Time
			status      *int
			header      http.Header
			body        []byte
		)
		err = s.pool.QueryRow(ctx, `SELECT route, body_sha256, state, locked_until, status, header, body
			FROM idempotency_keys WHERE account_id = $1 AND key = $2`, req.AccountID, req.Key).Scan(
			&route, &bodySHA, &state, &lockedUntil, &status, &header, &body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // swept between the two statements
		}
		if err != nil {
			return ClaimResult{}, err
		}
		outcome := idempotencyOutcome(req, route, bodySHA, state, lockedUntil, now)
		switch outcome {
		case ClaimReplay:
			return ClaimResult{Outcome: ClaimReplay, Response: SavedResponse{Status: *status, Header: header, Body: body}}, nil
		case ClaimGranted:
			// Take over a running key whose owner's lease ran out. An owner still in its
			// transaction holds the row; this waits for it and then finds it committed.
			tag, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET token = $3, locked_until = $4
				WHERE account_id = $1 AND key = $2 AND state = 'running' AND locked_until <= $5`,
				req.AccountID, req.Key, token, now.Add(lease), now)
			if err != nil {
				return ClaimResult{}, err
			}
			if tag.RowsAffected() == 1 {
				return granted(req, token), nil
			}
			continue
		default:
			return ClaimResult{Outcome: outcome}, nil
		}
	}
	// The key kept changing under us: another request is working on it.
	return ClaimResult{Outcome: ClaimInFlight}, nil
}

func granted(req IdempotencyRequest, token uuid.UUID) ClaimResult {
	return ClaimResult{Outcome: ClaimGranted, Claim: &IdempotencyClaim{AccountID: req.AccountID, Key: req.Key, Token: token}}
}

// idempotencyOutcome decides what an unexpired key means for req at now (ClaimGranted: the
// running owner's lease ran out and req may take the key over).
func idempotencyOutcome(req IdempotencyRequest, route string, bodySHA []byte, state IdempotencyState, lockedUntil, now time.Time) ClaimOutcome {
	switch {
	case route != req.Route:
		return ClaimOtherRoute
	case !bytes.Equal(bodySHA, req.BodySHA256):
		return ClaimOtherBody
	case state == IdempotencyCompleted:
		return ClaimReplay
	case lockedUntil.After(now):
		return ClaimInFlight
	case state == IdempotencyCommitted:
		return ClaimUnanswered
	default:
		return ClaimGranted
	}
}

// markIdempotencyCommitted records, inside tx, that the claim's request committed work.
func markIdempotencyCommitted(ctx context.Context, tx pgx.Tx, c *IdempotencyClaim) error {
	tag, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'committed'
		WHERE account_id = $1 AND key = $2 AND token = $3`, c.AccountID, c.Key, c.Token)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		c.lost.Store(true)
		return ErrIdempotencyClaimLost
	}
	return nil
}

// CompleteIdempotencyKey saves the claim's answer for replay.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, c *IdempotencyClaim, r SavedResponse) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'completed', status = $4, header = $5, body = $6
		WHERE account_id = $1 AND key = $2 AND token = $3`, c.AccountID, c.Key, c.Token, r.Status, r.Header, r.Body)
	return err
}

// ReleaseIdempotencyKey forgets a claim whose request committed no work and whose answer is
// not kept (5xx, 409, 429), so a repeat does the work. A committed key is kept: its work
// must not be done twice.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, c *IdempotencyClaim) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys
		WHERE account_id = $1 AND key = $2 AND token = $3 AND state = 'running'`, c.AccountID, c.Key, c.Token)
	return err
}
