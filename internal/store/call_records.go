package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewCall is a finished (or ringing) call as the telephony side records it.
type NewCall struct {
	AccountID       int64
	NumberID        *int64
	FromE164        string
	ToE164          string
	CallerName      string
	Disposition     string // answered, no-answer, voicemail, failed, in-progress, busy, blocked
	Filtered        bool   // screened out by call protection
	StartedAt       time.Time
	DurationSeconds int
	TalkSeconds     int
	ForwardSeconds  int
	RatedPence      int64
	AnsweredBy      *string
}

// CreateCall records a call and returns its internal id and public id.
func (s *Store) CreateCall(ctx context.Context, in NewCall) (int64, string, error) {
	publicID := NewPublicID(PrefixCall)
	var endedAt *time.Time
	if in.Disposition != "in-progress" {
		e := in.StartedAt.Add(time.Duration(in.DurationSeconds) * time.Second)
		endedAt = &e
	}
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, caller_name,
			disposition, filtered, started_at, ended_at, duration_seconds, talk_seconds, forward_seconds,
			total_rated_amount_pence, answered_by_staff)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
		in.AccountID, publicID, in.NumberID, in.FromE164, in.ToE164, in.CallerName, in.Disposition, in.Filtered,
		in.StartedAt, endedAt, in.DurationSeconds, in.TalkSeconds, in.ForwardSeconds, in.RatedPence, in.AnsweredBy).Scan(&id)
	return id, publicID, err
}

// NewTranscript is a finished transcript of a recording, with its AI summary.
type NewTranscript struct {
	AccountID      int64
	RecordingID    int64
	CallID         *int64
	Text           string
	Language       string
	Minutes        int
	RatedPence     int64
	Summary        *string
	Intent         *string
	Sentiment      *string
	Urgency        *string
	ActionItems    []string
	CallbackNumber *string
	Segments       []TranscriptSegment
	CompletedAt    time.Time
}

// CreateCompletedTranscript stores a completed transcript and its segments in one transaction.
func (s *Store) CreateCompletedTranscript(ctx context.Context, in NewTranscript) (int64, error) {
	if in.ActionItems == nil {
		in.ActionItems = []string{}
	}
	summaryStatus := "unavailable"
	if in.Summary != nil {
		summaryStatus = "completed"
	}
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, call_id, status, summary_status,
				text, language, minutes, rated_amount_pence, summary, intent, sentiment, urgency, action_items,
				callback_number, created_at, completed_at)
			VALUES ($1, $2, $3, 'completed', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) RETURNING id`,
			in.AccountID, in.RecordingID, in.CallID, summaryStatus, in.Text, in.Language, in.Minutes, in.RatedPence,
			in.Summary, in.Intent, in.Sentiment, in.Urgency, in.ActionItems, in.CallbackNumber, in.CompletedAt).Scan(&id)
		if err != nil {
			return err
		}
		rows := make([][]any, len(in.Segments))
		for i, sg := range in.Segments {
			rows[i] = []any{id, i, sg.StartSeconds, sg.EndSeconds, sg.Speaker, sg.Text}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"transcript_segments"},
			[]string{"transcript_id", "position", "start_seconds", "end_seconds", "speaker", "text"}, pgx.CopyFromRows(rows))
		return err
	})
	return id, err
}
