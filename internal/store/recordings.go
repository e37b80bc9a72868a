package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Recording is a stored call or voicemail recording. Deleted recordings are never returned.
type Recording struct {
	ID              int64
	AccountID       int64
	PublicID        string
	CallID          *int64
	MessageSlipID   *int64
	Kind            string // call, voicemail, slip_name, slip_message
	StorageKey      string
	ContentType     string
	DurationSeconds int
	SizeBytes       int64
	CreatedAt       time.Time
}

const recordingColumns = `id, account_id, public_id, call_id, message_slip_id, kind, storage_key, content_type,
	duration_seconds, size_bytes, created_at`

func scanRecording(row pgx.Row) (Recording, error) {
	var r Recording
	err := row.Scan(&r.ID, &r.AccountID, &r.PublicID, &r.CallID, &r.MessageSlipID, &r.Kind, &r.StorageKey,
		&r.ContentType, &r.DurationSeconds, &r.SizeBytes, &r.CreatedAt)
	return r, notFound(err)
}

// GetRecording reads one of the account's recordings by public id.
func (s *Store) GetRecording(ctx context.Context, accountID int64, publicID string) (Recording, error) {
	return scanRecording(s.pool.QueryRow(ctx, `SELECT `+recordingColumns+` FROM recordings
		WHERE account_id = $1 AND public_id = $2 AND deleted_at IS NULL`, accountID, publicID))
}

// GetRecordingForLink reads a recording by public id alone, for the signed audio link whose
// signature (made for one recording of one account) is the proof of access.
func (s *Store) GetRecordingForLink(ctx context.Context, publicID string) (Recording, error) {
	return scanRecording(s.pool.QueryRow(ctx, `SELECT `+recordingColumns+` FROM recordings
		WHERE public_id = $1 AND deleted_at IS NULL`, publicID))
}

// NewRecording is a recording to add; its audio is stored separately under StorageKey.
type NewRecording struct {
	AccountID       int64
	CallID          *int64
	MessageSlipID   *int64
	Kind            string
	StorageKey      string
	ContentType     string // default audio/wav
	DurationSeconds int
	SizeBytes       int64
	CreatedAt       time.Time // default now
}

// CreateRecording adds a recording row.
func (s *Store) CreateRecording(ctx context.Context, in NewRecording) (Recording, error) {
	if in.ContentType == "" {
		in.ContentType = "audio/wav"
	}
	var createdAt *time.Time
	if !in.CreatedAt.IsZero() {
		createdAt = &in.CreatedAt
	}
	return scanRecording(s.pool.QueryRow(ctx, `INSERT INTO recordings (account_id, public_id, call_id, message_slip_id, kind,
			storage_key, content_type, duration_seconds, size_bytes, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now())) RETURNING `+recordingColumns,
		in.AccountID, NewPublicID(PrefixRecording), in.CallID, in.MessageSlipID, in.Kind, in.StorageKey,
		in.ContentType, in.DurationSeconds, in.SizeBytes, createdAt))
}
