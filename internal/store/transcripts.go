package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Transcript is a recording's transcript with its AI summary fields.
type Transcript struct {
	ID               int64
	RecordingID      int64
	Status           string
	SummaryStatus    string
	Text             string
	Language         string
	Minutes          int
	RatedAmountPence int64
	Summary          *string
	Intent           *string
	Sentiment        *string
	Urgency          *string
	ActionItems      []string
	CallbackNumber   *string
	// FailureReason says why a failed transcription failed; null otherwise.
	FailureReason *string
	Segments      []TranscriptSegment
}

// TranscriptSegment is one stretch of speech.
type TranscriptSegment struct {
	StartSeconds float64
	EndSeconds   float64
	Speaker      string
	Text         string
}

// GetTranscript reads the transcript of one of the account's recordings (by internal id)
// with its segments in order; ErrNotFound when the recording has none.
func (s *Store) GetTranscript(ctx context.Context, accountID, recordingID int64) (Transcript, error) {
	var t Transcript
	err := s.pool.QueryRow(ctx, `SELECT id, recording_id, status, summary_status, text, language, minutes,
			rated_amount_pence, summary, intent, sentiment, urgency, action_items, callback_number, failure_reason
		FROM transcripts WHERE account_id = $1 AND recording_id = $2`, accountID, recordingID).Scan(
		&t.ID, &t.RecordingID, &t.Status, &t.SummaryStatus, &t.Text, &t.Language, &t.Minutes,
		&t.RatedAmountPence, &t.Summary, &t.Intent, &t.Sentiment, &t.Urgency, &t.ActionItems, &t.CallbackNumber, &t.FailureReason)
	if err != nil {
		return Transcript{}, notFound(err)
	}
	if t.ActionItems == nil {
		t.ActionItems = []string{}
	}
	rows, err := s.pool.Query(ctx, `SELECT start_seconds, end_seconds, speaker, text
		FROM transcript_segments WHERE transcript_id = $1 ORDER BY position`, t.ID)
	if err != nil {
		return Transcript{}, err
	}
	t.Segments, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TranscriptSegment, error) {
		var sg TranscriptSegment
		err := r.Scan(&sg.StartSeconds, &sg.EndSeconds, &sg.Speaker, &sg.Text)
		return sg, err
	})
	if err != nil {
		return Transcript{}, err
	}
	if t.Segments == nil {
		t.Segments = []TranscriptSegment{}
	}
	return t, nil
}

// TranscriptionPriceInputs is what pricing a transcription of a recording needs, read in one
// snapshot: the account's money and settings, this month's allowance use, today's spend and
// any transcript the recording already has.
type TranscriptionPriceInputs struct {
	Plan                  string
	TranscriptionDisabled bool
	RatePencePerMin       int
	BundleMinutes         int
	BalancePence          int64
	DailySpendLimitPence  int64
	AllowanceUsedMinutes  int
	SpentTodayPence       int64
	// ExistingStatus is the recording's transcript status, nil when it has none.
	ExistingStatus *string
}

// GetTranscriptionPriceInputs reads the inputs for pricing a transcription of recordingID.
// month is the first day of the current month and day is today, both in the account's time
// zone (dates only; their clock time is ignored).
func (s *Store) GetTranscriptionPriceInputs(ctx context.Context, accountID, recordingID int64, month, day time.Time) (TranscriptionPriceInputs, error) {
	var in TranscriptionPriceInputs
	err := s.pool.QueryRow(ctx, `SELECT a.plan, a.transcription_disabled, a.transcription_rate_pence_per_min,
			a.bundle_minutes, a.balance_pence, a.daily_spend_limit_pence,
			coalesce((SELECT u.minutes_used FROM transcription_allowance_usage u
				WHERE u.account_id = a.id AND u.month = $3::date), 0),
			coalesce((SELECT sum(c.amount_pence) FROM transcription_charges c
				WHERE c.account_id = a.id AND c.status = 'charged' AND c.spend_day = $4::date), 0)::bigint,
			(SELECT t.status FROM transcripts t WHERE t.account_id = a.id AND t.recording_id = $2)
		FROM accounts a WHERE a.id = $1`,
		accountID, recordingID, pgDate(month), pgDate(day)).Scan(
		&in.Plan, &in.TranscriptionDisabled, &in.RatePencePerMin, &in.BundleMinutes, &in.BalancePence,
		&in.DailySpendLimitPence, &in.AllowanceUsedMinutes, &in.SpentTodayPence, &in.ExistingStatus)
	return in, notFound(err)
}

// pgDate renders t's calendar date (in t's own location) for a date parameter.
func pgDate(t time.Time) string { return t.Format(time.DateOnly) }
