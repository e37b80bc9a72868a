package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
)

// Account is an account row.
type Account struct {
	ID                           int64
	PublicID                     string
	Name                         string
	Status                       string
	Plan                         string
	Addons                       []string
	IntegrationsDisabled         bool
	TranscriptionDisabled        bool
	TimeZone                     string
	DailySpendLimitPence         int64
	TranscriptionRatePencePerMin int
	BundleMinutes                int
	BalancePence                 int64
}

// NewAccount holds what an operator chooses when creating an account.
type NewAccount struct {
	Name     string
	Plan     string
	Addons   []string
	TimeZone string // default Europe/London
}

// CreateAccount adds an account.
func (s *Store) CreateAccount(ctx context.Context, in NewAccount) (Account, error) {
	if _, err := plans.Lookup(in.Plan); err != nil {
		return Account{}, err
	}
	if in.TimeZone == "" {
		in.TimeZone = "Europe/London"
	}
	if _, err := time.LoadLocation(in.TimeZone); err != nil {
		return Account{}, fmt.Errorf("time zone: %w", err)
	}
	if in.Addons == nil {
		in.Addons = []string{}
	}
	var id int64
	pid := NewPublicID(PrefixAccount)
	err := s.pool.QueryRow(ctx, `INSERT INTO accounts (public_id, name, plan, addons, time_zone)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, pid, in.Name, in.Plan, in.Addons, in.TimeZone).Scan(&id)
	if err != nil {
		return Account{}, err
	}
	return s.GetAccount(ctx, id)
}

const accountColumns = `id, public_id, name, status, plan, addons, integrations_disabled, transcription_disabled,
	time_zone, daily_spend_limit_pence, transcription_rate_pence_per_min, bundle_minutes, balance_pence`

func scanAccount(row pgx.Row) (Account, error) {
	var a Account
	err := row.Scan(&a.ID, &a.PublicID, &a.Name, &a.Status, &a.Plan, &a.Addons, &a.IntegrationsDisabled,
		&a.TranscriptionDisabled, &a.TimeZone, &a.DailySpendLimitPence, &a.TranscriptionRatePencePerMin,
		&a.BundleMinutes, &a.BalancePence)
	return a, notFound(err)
}

// GetAccount reads an account by internal id.
func (s *Store) GetAccount(ctx context.Context, id int64) (Account, error) {
	return scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE id = $1`, id))
}

// GetAccountByPublicID reads an account by public id.
func (s *Store) GetAccountByPublicID(ctx context.Context, publicID string) (Account, error) {
	return scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE public_id = $1`, publicID))
}

// AccountSettings are the operator-changeable parts of an account; nil fields stay as they are.
type AccountSettings struct {
	Plan                         *string
	Addons                       *[]string
	Status                       *string
	IntegrationsDisabled         *bool
	TranscriptionDisabled        *bool
	TimeZone                     *string
	DailySpendLimitPence         *int64
	TranscriptionRatePencePerMin *int
	BundleMinutes                *int
}

// UpdateAccount changes account settings.
func (s *Store) UpdateAccount(ctx context.Context, id int64, in AccountSettings) (Account, error) {
	if in.Plan != nil {
		if _, err := plans.Lookup(*in.Plan); err != nil {
			return Account{}, err
		}
	}
	if in.TimeZone != nil {
		if _, err := time.LoadLocation(*in.TimeZone); err != nil {
			return Account{}, fmt.Errorf("time zone: %w", err)
		}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE accounts SET
		plan = coalesce($2, plan), addons = coalesce($3, addons), status = coalesce($4, status),
		integrations_disabled = coalesce($5, integrations_disabled),
		transcription_disabled = coalesce($6, transcription_disabled),
		time_zone = coalesce($7, time_zone), daily_spend_limit_pence = coalesce($8, daily_spend_limit_pence),
		transcription_rate_pence_per_min = coalesce($9, transcription_rate_pence_per_min),
		bundle_minutes = coalesce($10, bundle_minutes)
		WHERE id = $1`, id, in.Plan, in.Addons, in.Status, in.IntegrationsDisabled, in.TranscriptionDisabled,
		in.TimeZone, in.DailySpendLimitPence, in.TranscriptionRatePencePerMin, in.BundleMinutes)
	if err != nil {
		return Account{}, err
	}
	if tag.RowsAffected() == 0 {
		return Account{}, ErrNotFound
	}
	return s.GetAccount(ctx, id)
}

// User is a person on an account.
type User struct {
	ID               int64
	AccountID        int64
	PublicID         string
	Name             string
	Email            string
	Role             string
	CanManageAPIKeys bool
	CanTranscribe    bool
	LeftAt           *time.Time
}

// NewUser is what an operator chooses when adding a user.
type NewUser struct {
	AccountID        int64
	Name             string
	Email            string
	Role             string // owner or member
	CanManageAPIKeys bool
	CanTranscribe    bool
}

// ErrUserExists is returned when an account already has a user with that email.
var ErrUserExists = errors.New("user exists")

// CreateUser adds a user to an account.
func (s *Store) CreateUser(ctx context.Context, in NewUser) (User, error) {
	if in.Role != "owner" && in.Role != "member" {
		return User{}, fmt.Errorf("role must be owner or member, not %q", in.Role)
	}
	u := User{AccountID: in.AccountID, PublicID: NewPublicID(PrefixUser), Name: in.Name, Email: in.Email,
		Role: in.Role, CanManageAPIKeys: in.CanManageAPIKeys || in.Role == "owner",
		CanTranscribe: in.CanTranscribe || in.Role == "owner"}
	err := s.pool.QueryRow(ctx, `INSERT INTO users (account_id, public_id, name, email, role, can_manage_api_keys, can_transcribe)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		u.AccountID, u.PublicID, u.Name, u.Email, u.Role, u.CanManageAPIKeys, u.CanTranscribe).Scan(&u.ID)
	if isUniqueViolation(err) {
		return User{}, fmt.Errorf("%w: a user with email %q is already on this account", ErrUserExists, in.Email)
	}
	return u, err
}

// GetUserByPublicID reads a user.
func (s *Store) GetUserByPublicID(ctx context.Context, publicID string) (User, error) {
	var u User
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, public_id, name, email, role, can_manage_api_keys, can_transcribe, left_at
		FROM users WHERE public_id = $1`, publicID).Scan(&u.ID, &u.AccountID, &u.PublicID, &u.Name, &u.Email,
		&u.Role, &u.CanManageAPIKeys, &u.CanTranscribe, &u.LeftAt)
	return u, notFound(err)
}

// AccountOwners lists the owners still on an account (for emails to owners).
func (s *Store) AccountOwners(ctx context.Context, accountID int64) ([]User, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, public_id, name, email, role, can_manage_api_keys, can_transcribe, left_at
		FROM users WHERE account_id = $1 AND role = 'owner' AND left_at IS NULL ORDER BY id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) {
		var u User
		err := r.Scan(&u.ID, &u.AccountID, &u.PublicID, &u.Name, &u.Email, &u.Role, &u.CanManageAPIKeys, &u.CanTranscribe, &u.LeftAt)
		return u, err
	})
}

// MarkUserLeft records that a user left the account; their keys stop working at once.
func (s *Store) MarkUserLeft(ctx context.Context, userID int64, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE users SET left_at = coalesce(left_at, $2) WHERE id = $1`, userID, at)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return err
}

// APIKey is a created key; Token is only set when it was just created.
type APIKey struct {
	ID        int64
	PublicID  string
	Name      string
	Prefix    string
	Abilities auth.Abilities
	Token     string
}

// ErrNotAllowed is returned when a user may not create a key with the asked permissions.
var ErrNotAllowed = errors.New("not allowed")

// MayGrant reports whether the user may put ability on a key they create: transcribe (and
// auto-transcribe, which includes it) needs the start-transcriptions allowance, webhooks:manage
// an owner.
func (u User) MayGrant(a auth.Ability) bool {
	switch {
	case auth.Abilities{a}.Has(auth.Transcribe):
		return u.CanTranscribe
	case a == auth.WebhooksManage:
		return u.Role == "owner"
	}
	return true
}

// MayManageKeys reports whether the user may create and revoke API keys: an owner, or a
// member the owner allowed, still on the account.
func (u User) MayManageKeys() bool {
	return u.LeftAt == nil && (u.Role == "owner" || u.CanManageAPIKeys)
}

// MayCreateKey says why the user may not create a key with these permissions (ErrNotAllowed), or nil.
func (u User) MayCreateKey(abilities auth.Abilities) error {
	if u.LeftAt != nil {
		return fmt.Errorf("%w: the user has left the account", ErrNotAllowed)
	}
	if !u.MayManageKeys() {
		return fmt.Errorf("%w: only an owner, or a member allowed to manage API keys, can create keys", ErrNotAllowed)
	}
	for _, a := range abilities {
		if u.MayGrant(a) {
			continue
		}
		if a == auth.WebhooksManage {
			return fmt.Errorf("%w: webhooks:manage is for owners only", ErrNotAllowed)
		}
		return fmt.Errorf("%w: only an owner, or a member allowed to start transcriptions, can create a transcribe key", ErrNotAllowed)
	}
	return nil
}

// CreateAPIKey makes a key acting as userID. The token is returned once and only its digest is kept.
func (s *Store) CreateAPIKey(ctx context.Context, userID int64, name string, abilities auth.Abilities) (APIKey, error) {
	u, err := s.getUserByID(ctx, userID)
	if err != nil {
		return APIKey{}, err
	}
	if err := u.MayCreateKey(abilities); err != nil {
		return APIKey{}, err
	}
	token, digest := auth.NewToken()
	k := APIKey{PublicID: NewPublicID(PrefixAPIKey), Name: name, Prefix: auth.DisplayPrefix(token), Abilities: abilities, Token: token}
	err = s.pool.QueryRow(ctx, `INSERT INTO api_keys (account_id, user_id, public_id, name, display_prefix, token_sha256, abilities)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		u.AccountID, u.ID, k.PublicID, name, k.Prefix, digest, abilities.Strings()).Scan(&k.ID)
	return k, err
}

func (s *Store) getUserByID(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, public_id, name, email, role, can_manage_api_keys, can_transcribe, left_at
		FROM users WHERE id = $1`, id).Scan(&u.ID, &u.AccountID, &u.PublicID, &u.Name, &u.Email,
		&u.Role, &u.CanManageAPIKeys, &u.CanTranscribe, &u.LeftAt)
	return u, notFound(err)
}

// RevokeAPIKey stops a key at once.
func (s *Store) RevokeAPIKey(ctx context.Context, keyPublicID string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE public_id = $1`, keyPublicID, at)
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return err
}

// Principal is who a request acts as: the key, its user and its account.
type Principal struct {
	Account     Account
	User        User
	KeyID       int64
	KeyPublicID string
	Abilities   auth.Abilities
}

// AuthenticateAndCount finds the live key with this digest, notes that it was used
// (api_keys.last_used_at, at most once a minute per key) and counts the request against the
// key's user in the rate-limit window starting at windowStart (subject "user:<id>", as
// HitRateLimit counts), in one statement; it returns the user's count in that window including
// this request. Revoked keys, unknown keys and keys of users who left give ErrNotFound.
func (s *Store) AuthenticateAndCount(ctx context.Context, digest []byte, windowStart time.Time) (Principal, int, error) {
	var p Principal
	var abilities []string
	var hits int
	a := &p.Account
	u := &p.User
	err := s.pool.QueryRow(ctx, `WITH k AS (
			SELECT k.id AS key_id, k.public_id AS key_public_id, k.abilities,
				u.id AS user_id, u.account_id, u.public_id AS user_public_id, u.name AS user_name, u.email, u.role,
				u.can_manage_api_keys, u.can_transcribe,
				a.id AS acct_id, a.public_id AS account_public_id, a.name AS account_name, a.status, a.plan, a.addons,
				a.integrations_disabled, a.transcription_disabled, a.time_zone, a.daily_spend_limit_pence,
				a.transcription_rate_pence_per_min, a.bundle_minutes, a.balance_pence
			FROM api_keys k JOIN users u ON u.id = k.user_id JOIN accounts a ON a.id = k.account_id
			WHERE k.token_sha256 = $1 AND k.revoked_at IS NULL AND u.left_at IS NULL),
		hit AS (
			INSERT INTO rate_limit_windows (subject, window_start, count)
			SELECT 'user:' || k.user_id, $2::timestamptz, 1 FROM k
			ON CONFLICT (subject, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
			RETURNING count),
		-- When the key was last used, written at most once a minute per key: most requests
		-- match no row and write nothing. A request racing another at the minute's turn waits
		-- for that one's row lock, then finds the fresh time and writes nothing either.
		used AS (
			UPDATE api_keys SET last_used_at = now() FROM k
			WHERE api_keys.id = k.key_id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < now() - interval '1 minute'))
		SELECT k.key_id, k.key_public_id, k.abilities,
			k.user_id, k.account_id, k.user_public_id, k.user_name, k.email, k.role, k.can_manage_api_keys, k.can_transcribe,
			k.acct_id, k.account_public_id, k.account_name, k.status, k.plan, k.addons, k.integrations_disabled,
			k.transcription_disabled, k.time_zone, k.daily_spend_limit_pence, k.transcription_rate_pence_per_min,
			k.bundle_minutes, k.balance_pence, (SELECT count FROM hit)
		FROM k`, digest, windowStart).Scan(
		&p.KeyID, &p.KeyPublicID, &abilities,
		&u.ID, &u.AccountID, &u.PublicID, &u.Name, &u.Email, &u.Role, &u.CanManageAPIKeys, &u.CanTranscribe,
		&a.ID, &a.PublicID, &a.Name, &a.Status, &a.Plan, &a.Addons, &a.IntegrationsDisabled, &a.TranscriptionDisabled,
		&a.TimeZone, &a.DailySpendLimitPence, &a.TranscriptionRatePencePerMin, &a.BundleMinutes, &a.BalancePence, &hits)
	if err != nil {
		return Principal{}, 0, notFound(err)
	}
	p.Abilities = make(auth.Abilities, len(abilities))
	for i, s := range abilities {
		p.Abilities[i] = auth.Ability(s)
	}
	return p, hits, nil
}
