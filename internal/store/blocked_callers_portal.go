package store

import (
	"context"
	"fmt"
	"time"
)

// The API has no operation that adds or removes a blocked caller; the portal's owners do it
// through these two, which check the actor as the portal's other owner-only writes do.

// MayBlockCallers is whether u may add and remove the account's blocked callers: an owner
// still on the account.
func MayBlockCallers(u User) bool { return u.Role == "owner" && u.LeftAt == nil }

// BlockCaller adds a block on e164 for actor's account: on every number, or on one of the
// account's numbers (numberPublicID; a released or another account's number is ErrNotFound).
// action is reject or voicemail. It returns the block's public_id.
func (s *Store) BlockCaller(ctx context.Context, actor User, e164, action, label, numberPublicID string, at time.Time) (string, error) {
	if !MayBlockCallers(actor) {
		return "", fmt.Errorf("%w: only an owner can block callers", ErrNotAllowed)
	}
	if action != "reject" && action != "voicemail" {
		return "", fmt.Errorf("block caller: action %q is neither reject nor voicemail", action)
	}
	in := NewBlockedCaller{AccountID: actor.AccountID, E164: e164, Action: action, Label: label, CreatedAt: at}
	if numberPublicID != "" {
		var id int64
		if err := s.pool.QueryRow(ctx, `SELECT id FROM numbers WHERE account_id = $1 AND public_id = $2 AND status <> 'released'`,
			actor.AccountID, numberPublicID).Scan(&id); err != nil {
			return "", notFound(err)
		}
		in.NumberID = &id
	}
	return s.CreateBlockedCaller(ctx, in)
}

// UnblockCaller removes a block of actor's account; another account's, or one already
// removed, is ErrNotFound.
func (s *Store) UnblockCaller(ctx context.Context, actor User, publicID string) error {
	if !MayBlockCallers(actor) {
		return fmt.Errorf("%w: only an owner can unblock callers", ErrNotAllowed)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM blocked_callers WHERE account_id = $1 AND public_id = $2`, actor.AccountID, publicID)
	if err != nil {
		return fmt.Errorf("unblock caller: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
