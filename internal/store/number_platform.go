package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNumberLive is returned when a number is added while another live number has its E.164.
var ErrNumberLive = errors.New("a live number already has this E.164")

// PlatformNumber is a number's row with every setting and the public id of its account;
// internal/numbers shapes it for the platform API and the admin commands.
type PlatformNumber struct {
	ID        int64
	AccountID int64
	PublicID  string
	Account   string
	E164      string
	Status    string
	Ownership string
	ReleaseAt *time.Time
	CreatedAt time.Time
	NumberSettings
}

// NumberSettings are the settings of a number the platform can change.
type NumberSettings struct {
	Label                         string
	BusinessProfile               string // name; empty for none
	SMSCapable                    bool
	SMSReady                      bool
	CLIEligible                   bool
	CLIVerified                   bool
	IsDefaultCallerID             bool
	ForwardCLIMode                string
	PlatformE164                  *string
	VoicemailTranscriptionEnabled bool
	CallTranscriptionEnabled      bool
	PrivacyModeEnabled            bool
}

const platformNumberColumns = `n.id, n.account_id, n.public_id, a.public_id, n.e164, n.status, n.ownership, n.release_at,
	n.created_at, n.label, coalesce(bp.name, ''), n.sms_capable, n.sms_ready, n.cli_eligible, n.cli_verified,
	n.is_default_caller_id, n.forward_cli_mode, n.platform_e164, n.voicemail_transcription_enabled,
	n.call_transcription_enabled, n.privacy_mode_enabled`

const platformNumberFrom = ` FROM numbers n JOIN accounts a ON a.id = n.account_id
	LEFT JOIN business_profiles bp ON bp.id = n.business_profile_id`

func scanPlatformNumber(row pgx.Row) (PlatformNumber, error) {
	var n PlatformNumber
	s := &n.NumberSettings
	err := row.Scan(&n.ID, &n.AccountID, &n.PublicID, &n.Account, &n.E164, &n.Status, &n.Ownership, &n.ReleaseAt,
		&n.CreatedAt, &s.Label, &s.BusinessProfile, &s.SMSCapable, &s.SMSReady, &s.CLIEligible, &s.CLIVerified,
		&s.IsDefaultCallerID, &s.ForwardCLIMode, &s.PlatformE164, &s.VoicemailTranscriptionEnabled,
		&s.CallTranscriptionEnabled, &s.PrivacyModeEnabled)
	if n.ReleaseAt != nil {
		t := n.ReleaseAt.UTC()
		n.ReleaseAt = &t
	}
	n.CreatedAt = n.CreatedAt.UTC()
	return n, notFound(err)
}

// PlatformNumberForUpdate locks and returns the number with this E.164: the live one, or else
// the one released last (so that repeating a release answers as the first time did).
func platformNumberForUpdate(ctx context.Context, tx pgx.Tx, e164 string) (PlatformNumber, error) {
	return scanPlatformNumber(tx.QueryRow(ctx, `SELECT `+platformNumberColumns+platformNumberFrom+`
		WHERE n.e164 = $1 ORDER BY n.status = 'released', n.id DESC LIMIT 1 FOR UPDATE OF n`, e164))
}

// PlatformNumberByID reads a number by its row id.
func platformNumberByID(ctx context.Context, tx pgx.Tx, id int64) (PlatformNumber, error) {
	return scanPlatformNumber(tx.QueryRow(ctx, `SELECT `+platformNumberColumns+platformNumberFrom+` WHERE n.id = $1`, id))
}

// businessProfileID finds the account's business profile with this name, creating it when
// there is none; an empty name is no profile.
func businessProfileID(ctx context.Context, tx pgx.Tx, accountID int64, name string) (*int64, error) {
	if name == "" {
		return nil, nil
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM business_profiles WHERE account_id = $1 AND name = $2 ORDER BY id LIMIT 1`,
		accountID, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `INSERT INTO business_profiles (account_id, public_id, name) VALUES ($1, $2, $3) RETURNING id`,
			accountID, NewPublicID(PrefixBusinessProfile), name).Scan(&id)
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// InsertPlatformNumber adds a number to an account in tx and returns its row id. It answers
// ErrNumberLive when another live number has the same E.164.
func insertPlatformNumber(ctx context.Context, tx pgx.Tx, accountID int64, e164, status, ownership string, in NumberSettings) (int64, error) {
	bpID, err := businessProfileID(ctx, tx, accountID, in.BusinessProfile)
	if err != nil {
		return 0, err
	}
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO numbers (account_id, public_id, e164, status, ownership, label, business_profile_id,
			sms_capable, sms_ready, cli_eligible, cli_verified, is_default_caller_id, forward_cli_mode, platform_e164,
			voicemail_transcription_enabled, call_transcription_enabled, privacy_mode_enabled)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id`,
		accountID, NewPublicID(PrefixNumber), e164, status, ownership, in.Label, bpID, in.SMSCapable, in.SMSReady,
		in.CLIEligible, in.CLIVerified, in.IsDefaultCallerID, in.ForwardCLIMode, in.PlatformE164,
		in.VoicemailTranscriptionEnabled, in.CallTranscriptionEnabled, in.PrivacyModeEnabled).Scan(&id)
	if isUniqueViolation(err) {
		return 0, ErrNumberLive
	}
	return id, err
}

// UpdateNumberSettings replaces a number's settings.
func updateNumberSettings(ctx context.Context, tx pgx.Tx, n PlatformNumber, in NumberSettings) error {
	bpID, err := businessProfileID(ctx, tx, n.AccountID, in.BusinessProfile)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE numbers SET label = $2, business_profile_id = $3, sms_capable = $4, sms_ready = $5,
			cli_eligible = $6, cli_verified = $7, is_default_caller_id = $8, forward_cli_mode = $9, platform_e164 = $10,
			voicemail_transcription_enabled = $11, call_transcription_enabled = $12, privacy_mode_enabled = $13
		WHERE id = $1`,
		n.ID, in.Label, bpID, in.SMSCapable, in.SMSReady, in.CLIEligible, in.CLIVerified, in.IsDefaultCallerID,
		in.ForwardCLIMode, in.PlatformE164, in.VoicemailTranscriptionEnabled, in.CallTranscriptionEnabled, in.PrivacyModeEnabled)
	return err
}

// SetNumberState changes a number's status, ownership and release time.
func setNumberState(ctx context.Context, tx pgx.Tx, id int64, status, ownership string, releaseAt *time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE numbers SET status = $2, ownership = $3, release_at = $4 WHERE id = $1`,
		id, status, ownership, releaseAt)
	if isUniqueViolation(err) {
		return ErrNumberLive
	}
	return err
}

// ReplaceNumberRoutes replaces all of a number's routes (default, schedules in order, override).
func replaceNumberRoutes(ctx context.Context, tx pgx.Tx, numberID int64, routes []NumberRoute) error {
	if _, err := tx.Exec(ctx, `DELETE FROM number_routes WHERE number_id = $1`, numberID); err != nil {
		return err
	}
	return insertRoutes(ctx, tx, numberID, routes)
}
