package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LiveNumber is a number the platform answers, with the account it belongs to.
type LiveNumber struct {
	ID                 int64
	AccountID          int64
	AccountPublicID    string
	AccountName        string
	PublicID           string
	E164               string
	Label              string
	PrivacyMode        bool
	SharedLinkLifetime time.Duration
}

// LiveNumberByE164 finds the live (not released) number with this E.164 address.
func liveNumberByE164(ctx context.Context, q pgx.Tx, e164 string) (LiveNumber, error) {
	var n LiveNumber
	var hours int
	err := q.QueryRow(ctx, `SELECT n.id, n.account_id, a.public_id, a.name, n.public_id, n.e164, n.label, n.privacy_mode_enabled,
			n.shared_link_lifetime_hours
		FROM numbers n JOIN accounts a ON a.id = n.account_id
		WHERE n.e164 = $1 AND n.status <> 'released'`, e164).Scan(
		&n.ID, &n.AccountID, &n.AccountPublicID, &n.AccountName, &n.PublicID, &n.E164, &n.Label, &n.PrivacyMode, &hours)
	n.SharedLinkLifetime = time.Duration(hours) * time.Hour
	return n, notFound(err)
}

// ListLiveNumbers lists every live number (for the platform and the simulator).
func (s *Store) ListLiveNumbers(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT e164 FROM numbers WHERE status <> 'released' ORDER BY e164`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// CallReport is a finished call as the platform reports it.
type CallReport struct {
	NewCall
	Emergency bool
	// PlatformRef is the platform's id of the call; a second report with it is ignored.
	PlatformRef string
	Department  *string
	TargetType  *string
	TargetLabel *string
	Recording   *NewRecording // CallID and AccountID are filled in
}

// ReportedCall is what a report of a call stored (CallReports.Commit).
type ReportedCall struct {
	CallID            int64
	CallPublicID      string
	RecordingID       int64
	RecordingPublicID string
	RecordingCreated  time.Time
	// Duplicate is true when the platform had already reported this call; nothing was stored.
	Duplicate bool
}

// VoicemailPage is what the shared voicemail page shows.
type VoicemailPage struct {
	RecordingPublicID     string
	AccountName           string
	SharedLinksClosedFrom *time.Time // accounts.shared_links_revoked_before
	CallerE164            string
	CallerName            string
	NumberLabel           string
	ReceivedAt            time.Time
	DurationSeconds       int
	TranscriptStatus      *string
	TranscriptText        string
}

// GetVoicemailPage reads a voicemail (not a call recording) that has not been deleted.
func (s *Store) GetVoicemailPage(ctx context.Context, recordingPublicID string) (VoicemailPage, error) {
	var p VoicemailPage
	err := s.pool.QueryRow(ctx, `SELECT r.public_id, a.name, a.shared_links_revoked_before, c.from_e164, c.caller_name,
			coalesce(n.label, ''), r.created_at, r.duration_seconds, t.status, coalesce(t.text, '')
		FROM recordings r
		JOIN accounts a ON a.id = r.account_id
		JOIN calls c ON c.id = r.call_id
		LEFT JOIN numbers n ON n.id = c.number_id
		LEFT JOIN transcripts t ON t.recording_id = r.id
		WHERE r.public_id = $1 AND r.kind = 'voicemail' AND r.deleted_at IS NULL`, recordingPublicID).Scan(
		&p.RecordingPublicID, &p.AccountName, &p.SharedLinksClosedFrom, &p.CallerE164, &p.CallerName, &p.NumberLabel,
		&p.ReceivedAt, &p.DurationSeconds, &p.TranscriptStatus, &p.TranscriptText)
	return p, notFound(err)
}
