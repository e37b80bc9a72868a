package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SecretRevealsKept is how long a record of a signing secret's reveal is kept.
const SecretRevealsKept = 90 * 24 * time.Hour

// SecretReveal is one showing of an endpoint's signing secret: who, and when.
type SecretReveal struct {
	UserName, UserEmail string
	At                  time.Time
}

// MayRevealSecrets is whether u may have a webhook endpoint's signing secret shown again: an
// owner still on the account (webhooks are owners' alone).
func MayRevealSecrets(u User) bool { return u.Role == "owner" && u.LeftAt == nil }

// RecordSecretReveal records that actor had the signing secret of the account's endpoint
// shown at at. The secret is to be shown only once this returns nil.
func (s *Store) RecordSecretReveal(ctx context.Context, actor User, endpoint string, at time.Time) error {
	if !MayRevealSecrets(actor) {
		return fmt.Errorf("%w: only an owner can see a signing secret again", ErrNotAllowed)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO webhook_secret_reveals (account_id, endpoint_public_id, user_id, revealed_at)
		VALUES ($1, $2, $3, $4)`, actor.AccountID, endpoint, actor.ID, at); err != nil {
		return fmt.Errorf("record a secret reveal: %w", err)
	}
	return nil
}

// PruneSecretReveals deletes the records of reveals made before `before` (the retention
// maintainer keeps SecretRevealsKept).
func (s *Store) PruneSecretReveals(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_secret_reveals WHERE revealed_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune secret reveals: %w", err)
	}
	return tag.RowsAffected(), nil
}

// SecretReveals lists the newest limit reveals of the account's endpoint, newest first.
func (s *Store) SecretReveals(ctx context.Context, accountID int64, endpoint string, limit int) ([]SecretReveal, error) {
	rows, err := s.pool.Query(ctx, `SELECT u.name, u.email, r.revealed_at FROM webhook_secret_reveals r JOIN users u ON u.id = r.user_id
		WHERE r.account_id = $1 AND r.endpoint_public_id = $2 ORDER BY r.revealed_at DESC, r.id DESC LIMIT $3`, accountID, endpoint, limit)
	if err != nil {
		return nil, fmt.Errorf("secret reveals: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SecretReveal, error) {
		var v SecretReveal
		err := r.Scan(&v.UserName, &v.UserEmail, &v.At)
		return v, err
	})
}
