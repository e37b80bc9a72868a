package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/auth"
)

// PortalSessions is the portal's session store: scs's PostgreSQL store on this pool, so every
// replica sees every session. It starts no cleanup goroutine; PrunePortal deletes expired rows.
func (s *Store) PortalSessions() scs.Store {
	return pgxstore.NewWithCleanupInterval(s.pool, 0)
}

const userColumns = `id, account_id, public_id, name, email, role, can_manage_api_keys, can_transcribe, left_at`

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.ID, &u.AccountID, &u.PublicID, &u.Name, &u.Email, &u.Role, &u.CanManageAPIKeys, &u.CanTranscribe, &u.LeftAt)
	return u, notFound(err)
}

// GetUser reads a user by internal id.
func (s *Store) GetUser(ctx context.Context, id int64) (User, error) { return s.getUserByID(ctx, id) }

// UsersByEmail lists the users still on an account with this email (case-insensitive), one per
// account, oldest first.
func (s *Store) UsersByEmail(ctx context.Context, email string) ([]User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1) AND left_at IS NULL ORDER BY id LIMIT 20`, email)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) { return scanUser(r) })
}

// AccountUsers lists an account's users still on it, owners first.
func (s *Store) AccountUsers(ctx context.Context, accountID int64) ([]User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = $1 AND left_at IS NULL
		ORDER BY role = 'owner' DESC, id LIMIT 1000`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) { return scanUser(r) })
}

// accountUser reads a user of this account who has not left; another account's user is ErrNotFound.
func (s *Store) accountUser(ctx context.Context, accountID int64, userPublicID string) (User, error) {
	return scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = $1 AND public_id = $2 AND left_at IS NULL`,
		accountID, userPublicID))
}

// SetUserAllowances changes a member's two allowances: managing API keys and starting paid
// transcriptions. Only an owner of the same account may do it, and an owner's are fixed.
func (s *Store) SetUserAllowances(ctx context.Context, actor User, userPublicID string, manageKeys, transcribe bool) (User, error) {
	if actor.Role != "owner" || actor.LeftAt != nil {
		return User{}, fmt.Errorf("%w: only an owner can change what members may do", ErrNotAllowed)
	}
	u, err := s.accountUser(ctx, actor.AccountID, userPublicID)
	if err != nil {
		return User{}, err
	}
	if u.Role == "owner" {
		return User{}, fmt.Errorf("%w: an owner may always manage keys and transcribe", ErrNotAllowed)
	}
	_, err = s.pool.Exec(ctx, `UPDATE users SET can_manage_api_keys = $2, can_transcribe = $3 WHERE id = $1`, u.ID, manageKeys, transcribe)
	u.CanManageAPIKeys, u.CanTranscribe = manageKeys, transcribe
	return u, err
}

// RemoveAccountUser marks a member of actor's account as gone (MarkUserLeft): their keys and
// portal sessions stop at once. Only an owner may, and not for themself.
func (s *Store) RemoveAccountUser(ctx context.Context, actor User, userPublicID string, at time.Time) error {
	if actor.Role != "owner" || actor.LeftAt != nil {
		return fmt.Errorf("%w: only an owner can remove users", ErrNotAllowed)
	}
	u, err := s.accountUser(ctx, actor.AccountID, userPublicID)
	if err != nil {
		return err
	}
	if u.ID == actor.ID {
		return fmt.Errorf("%w: an owner cannot remove themself", ErrNotAllowed)
	}
	return s.MarkUserLeft(ctx, u.ID, at)
}

// KeyListing is an API key as the portal lists it; the token itself is never kept.
type KeyListing struct {
	PublicID      string
	Name          string
	Prefix        string
	Abilities     auth.Abilities
	CreatedAt     time.Time
	LastUsedAt    *time.Time
	CreatedByName string
	CreatedByID   string
}

// AccountAPIKeys lists the live keys of an account, newest first; with ownUserID > 0 only
// that user's keys (a member sees their own).
func (s *Store) AccountAPIKeys(ctx context.Context, accountID, ownUserID int64) ([]KeyListing, error) {
	rows, err := s.pool.Query(ctx, `SELECT k.public_id, k.name, k.display_prefix, k.abilities, k.created_at, k.last_used_at, u.name, u.public_id
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.account_id = $1 AND k.revoked_at IS NULL AND u.left_at IS NULL AND ($2 = 0 OR k.user_id = $2)
		ORDER BY k.id DESC LIMIT 500`, accountID, ownUserID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KeyListing, error) {
		var k KeyListing
		var abilities []string
		err := r.Scan(&k.PublicID, &k.Name, &k.Prefix, &abilities, &k.CreatedAt, &k.LastUsedAt, &k.CreatedByName, &k.CreatedByID)
		for _, a := range abilities {
			k.Abilities = append(k.Abilities, auth.Ability(a))
		}
		return k, err
	})
}

// RevokeAccountAPIKey revokes a key of actor's account: an owner any of them, a member allowed
// to manage keys their own. Another account's key, or another member's for a member, is
// ErrNotFound, as for any id the actor may not see.
func (s *Store) RevokeAccountAPIKey(ctx context.Context, actor User, keyPublicID string, at time.Time) error {
	if !actor.MayManageKeys() {
		return fmt.Errorf("%w: only an owner, or a member allowed to manage API keys, can revoke keys", ErrNotAllowed)
	}
	own := int64(0)
	if actor.Role != "owner" {
		own = actor.ID
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3)
		WHERE public_id = $1 AND account_id = $2 AND ($4 = 0 OR user_id = $4)`, keyPublicID, actor.AccountID, at, own)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return err
}

// NewSignInLink stores a one-time sign-in secret for userID valid until expires and returns the
// secret (256 random bits) for the link; only its digest is kept.
func (s *Store) NewSignInLink(ctx context.Context, userID int64, now, expires time.Time) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	_, err := s.pool.Exec(ctx, `INSERT INTO portal_sign_in_links (token_sha256, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		sum[:], userID, now, expires)
	return secret, err
}

// SignInLinkState is what a sign-in secret is worth now.
type SignInLinkState int

// The states of a sign-in link.
const (
	SignInLinkUnknown SignInLinkState = iota // never issued, pruned, or its user left
	SignInLinkValid
	SignInLinkUsed
	SignInLinkExpired
)

func signInDigest(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// CheckSignInLink says whether secret would sign in now, without using it.
func (s *Store) CheckSignInLink(ctx context.Context, secret string, now time.Time) (SignInLinkState, error) {
	var used *time.Time
	var expires time.Time
	err := s.pool.QueryRow(ctx, `SELECT l.used_at, l.expires_at FROM portal_sign_in_links l JOIN users u ON u.id = l.user_id
		WHERE l.token_sha256 = $1 AND u.left_at IS NULL`, signInDigest(secret)).Scan(&used, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return SignInLinkUnknown, nil
	case err != nil:
		return SignInLinkUnknown, err
	case used != nil:
		return SignInLinkUsed, nil
	case !now.Before(expires):
		return SignInLinkExpired, nil
	}
	return SignInLinkValid, nil
}

// UseSignInLink uses secret once: it returns the user it signs in, or the state that refuses it.
// Two replicas racing on the same link cannot both succeed (one UPDATE with used_at IS NULL).
func (s *Store) UseSignInLink(ctx context.Context, secret string, now time.Time) (User, SignInLinkState, error) {
	var userID int64
	err := s.pool.QueryRow(ctx, `UPDATE portal_sign_in_links l SET used_at = $2
		FROM users u WHERE u.id = l.user_id AND l.token_sha256 = $1 AND l.used_at IS NULL AND l.expires_at > $2 AND u.left_at IS NULL
		RETURNING l.user_id`, signInDigest(secret), now).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		state, err := s.CheckSignInLink(ctx, secret, now)
		return User{}, state, err
	}
	if err != nil {
		return User{}, SignInLinkUnknown, err
	}
	u, err := s.getUserByID(ctx, userID)
	return u, SignInLinkValid, err
}

// PrunePortal deletes expired portal sessions and sign-in links that expired before cutoff.
func (s *Store) PrunePortal(ctx context.Context, now, cutoff time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expiry < $1`, now); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM portal_sign_in_links WHERE expires_at < $1`, cutoff)
	return err
}
