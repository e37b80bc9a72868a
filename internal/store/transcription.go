package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Paid transcriptions: the charge, the refund, and the writes of a finished job.
//
// Every change to an account's money takes the account row lock first (SELECT ... FOR UPDATE),
// so charges and refunds of one account are serialised: the balance, the bundle minutes, the
// allowance and the day's spend are read and changed as one step, and two requests for the
// same call see each other's charge.

var (
	// ErrNoRecording: the call has no recording to transcribe (API 422).
	ErrNoRecording = errors.New("the call has no recording")
	// ErrTranscriptionUnavailable: the plan has no transcription or it is switched off for the
	// account (API 403).
	ErrTranscriptionUnavailable = errors.New("transcription is not available on this account")
	// ErrChargeRefunded: the job's charge was refunded; its results are not stored.
	ErrChargeRefunded = errors.New("the transcription charge was refunded")
	// ErrTranscriptCompleted: the transcript is complete, so its charge is not refunded.
	ErrTranscriptCompleted = errors.New("the transcript is already complete")
)

// Outcomes of StartTranscription.
const (
	// TranscribeStarted: charged now; a job must be created for Charge.
	TranscribeStarted = "started"
	// TranscribeExisting: the call's recording is already transcribed or pending; nothing charged.
	TranscribeExisting = "existing"
	// TranscribeRefused: the balance cannot cover it or the daily limit would be passed (API 402).
	TranscribeRefused = "refused"
	// TranscribeSkipped: an automatic transcription that must not happen (see SkipReason).
	TranscribeSkipped = "skipped"
)

// Reasons an automatic transcription is skipped.
const (
	SkipNoAutoTranscribeKey = "no_auto_transcribe_key"
	SkipPrivacyMode         = "privacy_mode"
	SkipNotCallRecording    = "not_a_call_recording"
)

// Charge statuses.
const (
	ChargeCharged  = "charged"
	ChargeRefunded = "refunded"
)

// TranscriptionCharge is what was taken for one transcription, with the public ids a
// TranscriptionJob carries.
type TranscriptionCharge struct {
	ID                int64
	PublicID          string
	AccountID         int64
	AccountPublicID   string
	CallID            int64
	CallPublicID      string
	RecordingID       int64
	RecordingPublicID string
	Minutes           int
	AllowanceMinutes  int
	BundleMinutes     int
	AmountPence       int64
	Status            string
	Automatic         bool
	JobCreatedAt      *time.Time
	CreatedAt         time.Time
}

const chargeSelect = `SELECT ch.id, ch.public_id, ch.account_id, a.public_id, ch.call_id, c.public_id, ch.recording_id, r.public_id,
		ch.minutes, ch.allowance_minutes, ch.bundle_minutes, ch.amount_pence, ch.status, ch.automatic, ch.job_created_at, ch.created_at
	FROM transcription_charges ch
	JOIN accounts a ON a.id = ch.account_id
	JOIN calls c ON c.id = ch.call_id
	JOIN recordings r ON r.id = ch.recording_id`

func scanCharge(row pgx.Row) (TranscriptionCharge, error) {
	var c TranscriptionCharge
	err := row.Scan(&c.ID, &c.PublicID, &c.AccountID, &c.AccountPublicID, &c.CallID, &c.CallPublicID, &c.RecordingID,
		&c.RecordingPublicID, &c.Minutes, &c.AllowanceMinutes, &c.BundleMinutes, &c.AmountPence, &c.Status, &c.Automatic,
		&c.JobCreatedAt, &c.CreatedAt)
	return c, notFound(err)
}

// TranscribeRequest asks for one call to be transcribed. Exactly one of CallPublicID (the API)
// and CallID (automatic transcription) names the call.
type TranscribeRequest struct {
	AccountID    int64
	CallPublicID string
	CallID       int64
	// Automatic: started because the account has an auto-transcribe key, not by a request.
	// An automatic transcription is skipped (not refused) on a number in privacy mode, for a
	// recording that is not a recorded call, or when no live auto-transcribe key is left.
	Automatic bool
	Now       time.Time
	// Idempotency is the request's Idempotency-Key claim, committed with the charge (nil
	// without a key).
	Idempotency *IdempotencyClaim
}

// TranscribeResult is what StartTranscription did.
type TranscribeResult struct {
	Outcome      string
	CallID       int64
	CallPublicID string
	CallerE164   string
	// Status and SummaryStatus of the call's transcript after the request.
	Status        string
	SummaryStatus string
	// Charge is the call's live charge: the new one (Started), or for Existing the one made
	// earlier, if any (its job may still have to be created).
	Charge *TranscriptionCharge
	// Price and Estimate are the inputs and the priced split (always set once priced; for
	// Refused they make the 402's estimate).
	Price          billing.Input
	Estimate       billing.Charge
	ExistingStatus *string
	// Refusal is billing.RefusedBalance or billing.RefusedDailyLimit (Refused only).
	Refusal    string
	SkipReason string
}

// StartTranscription charges for and queues the transcription of a call's recording, in one
// transaction under the account's row lock:
//   - an unknown or other account's call is ErrNotFound, a call without a recording
//     ErrNoRecording, an account whose plan lacks transcription ErrTranscriptionUnavailable;
//   - a recording already transcribed, pending, or with a live charge: Existing, no charge;
//   - minutes come from the month's plan allowance, then bundle minutes, then the balance at
//     the account's rate (a ledger entry), priced by billing.Estimate as the estimate is;
//   - a charge the balance cannot cover, or that would pass the day's spending limit, is
//     Refused and nothing changes;
//   - otherwise the charge row (job_created_at NULL until its job exists) and a pending
//     transcript are written: Started.
func (s *Store) StartTranscription(ctx context.Context, req TranscribeRequest) (TranscribeResult, error) {
	var res TranscribeResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := commitIdempotencyClaim(ctx, tx, req.Idempotency); err != nil {
			return err
		}
		var err error
		res, err = startTranscription(ctx, tx, req)
		return err
	})
	return res, err
}

// startTranscription runs StartTranscription's steps inside its transaction.
func startTranscription(ctx context.Context, tx pgx.Tx, req TranscribeRequest) (TranscribeResult, error) {
	var res TranscribeResult
	call, err := readTranscribeCall(ctx, tx, req, &res)
	if err != nil {
		return res, err
	}
	acct, err := lockTranscribeAccount(ctx, tx, req)
	if err != nil {
		return res, err
	}
	if call.recID == nil {
		return res, ErrNoRecording
	}
	usage, err := readTranscribeUsage(ctx, tx, req, acct, &res, &call)
	if err != nil {
		return res, err
	}
	res.ExistingStatus = call.tStatus
	if existingTranscription(&res, call) {
		return res, nil
	}
	if req.Automatic {
		if res.SkipReason = automaticSkipReason(*call.recKind, call.privacy, call.hasAutoKey); res.SkipReason != "" {
			res.Outcome = TranscribeSkipped
			return res, nil
		}
	}
	priceTranscription(&res, call, acct, usage)
	if res.Refusal = billing.Refusal(res.Estimate); res.Refusal != "" {
		res.Outcome = TranscribeRefused
		return res, nil
	}
	charge, err := writeTranscriptionCharge(ctx, tx, req, &res, call, acct)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Status, res.SummaryStatus, res.Charge = TranscribeStarted, "pending", "pending", &charge
	return res, nil
}

// transcribeCall is the call's recording and transcript as startTranscription read them
// (nil when the call has none).
type transcribeCall struct {
	privacy               *bool
	recID                 *int64
	recPublicID, recKind  *string
	recSeconds            *int
	recBytes              *int64
	tStatus, tSummaryStat *string
	hasAutoKey            bool
}

// readTranscribeCall reads the call, its recording and transcript before the account lock:
// they are not money, and what matters under concurrency (a live charge for the call) is
// checked again under the lock. It fills res's call fields.
func readTranscribeCall(ctx context.Context, tx pgx.Tx, req TranscribeRequest, res *TranscribeResult) (transcribeCall, error) {
	var c transcribeCall
	callWhere := `c.public_id = $2`
	var callKey any = req.CallPublicID
	if req.CallPublicID == "" {
		callWhere, callKey = `c.id = $2`, req.CallID
	}
	err := tx.QueryRow(ctx, `SELECT c.id, c.public_id, c.from_e164, n.privacy_mode_enabled,
			r.id, r.public_id, r.kind, r.duration_seconds, r.size_bytes, t.status, t.summary_status,
			$3 AND EXISTS (SELECT 1 FROM api_keys k JOIN users u ON u.id = k.user_id
				WHERE k.account_id = c.account_id AND k.revoked_at IS NULL AND 'auto-transcribe' = ANY (k.abilities)
				AND u.left_at IS NULL AND (u.role = 'owner' OR u.can_transcribe))
		FROM calls c
		LEFT JOIN numbers n ON n.id = c.number_id
		LEFT JOIN LATERAL (SELECT r.id, r.public_id, r.kind, r.duration_seconds, r.size_bytes FROM recordings r
			WHERE r.call_id = c.id AND r.account_id = c.account_id AND r.kind IN ('call', 'voicemail') AND r.deleted_at IS NULL
			ORDER BY r.id DESC LIMIT 1) r ON true
		LEFT JOIN transcripts t ON t.recording_id = r.id
		WHERE c.account_id = $1 AND `+callWhere, req.AccountID, callKey, req.Automatic).Scan(
		&res.CallID, &res.CallPublicID, &res.CallerE164, &c.privacy, &c.recID, &c.recPublicID, &c.recKind, &c.recSeconds, &c.recBytes,
		&c.tStatus, &c.tSummaryStat, &c.hasAutoKey)
	if err != nil {
		return c, notFound(err)
	}
	return c, nil
}

// transcribeAccount is the account's money as read under its row lock, and the billing
// periods of req.Now in its time zone.
type transcribeAccount struct {
	publicID            string
	plan                plans.Plan
	rate, bundle        int
	balance, dailyLimit int64
	month, day          time.Time
}

// lockTranscribeAccount locks the account's row: charges and refunds of the account queue
// here. A plan without transcription, or transcription switched off, is
// ErrTranscriptionUnavailable.
func lockTranscribeAccount(ctx context.Context, tx pgx.Tx, req TranscribeRequest) (transcribeAccount, error) {
	var (
		a              transcribeAccount
		plan, timeZone string
		disabled       bool
	)
	if err := tx.QueryRow(ctx, `SELECT public_id, plan, transcription_disabled, time_zone, transcription_rate_pence_per_min,
			bundle_minutes, balance_pence, daily_spend_limit_pence
		FROM accounts WHERE id = $1 FOR UPDATE`, req.AccountID).Scan(
		&a.publicID, &plan, &disabled, &timeZone, &a.rate, &a.bundle, &a.balance, &a.dailyLimit); err != nil {
		return a, notFound(err)
	}
	p, planErr := plans.Lookup(plan)
	if planErr != nil || !p.Transcription || disabled {
		return a, ErrTranscriptionUnavailable
	}
	a.plan = p
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		loc = time.UTC
	}
	a.month, a.day = billing.Periods(req.Now, loc)
	return a, nil
}

// transcribeUsage is the month's allowance use and the day's spend, read under the lock.
type transcribeUsage struct {
	allowanceUsed int
	spentToday    int64
}

// readTranscribeUsage reads, under the lock (a fresh snapshot), the call's live charge, the
// month's allowance use and the day's spend. A live charge goes in res.Charge, and the
// transcript's status is read again as the charge's transaction left it (it may have
// committed after readTranscribeCall).
func readTranscribeUsage(ctx context.Context, tx pgx.Tx, req TranscribeRequest, acct transcribeAccount, res *TranscribeResult,
	call *transcribeCall) (transcribeUsage, error) {
	var u transcribeUsage
	var liveCharge *string
	if err := tx.QueryRow(ctx, `SELECT
			(SELECT public_id FROM transcription_charges WHERE call_id = $4 AND status = 'charged'),
			coalesce((SELECT minutes_used FROM transcription_allowance_usage WHERE account_id = $1 AND month = $2::date), 0),
			coalesce((SELECT sum(amount_pence) FROM transcription_charges
				WHERE account_id = $1 AND status = 'charged' AND spend_day = $3::date), 0)::bigint`,
		req.AccountID, pgDate(acct.month), pgDate(acct.day), res.CallID).Scan(&liveCharge, &u.allowanceUsed, &u.spentToday); err != nil {
		return u, err
	}
	if liveCharge == nil {
		return u, nil
	}
	live, err := scanCharge(tx.QueryRow(ctx, chargeSelect+` WHERE ch.public_id = $1`, *liveCharge))
	if err != nil {
		return u, err
	}
	res.Charge = &live
	if err := tx.QueryRow(ctx, `SELECT status, summary_status FROM transcripts WHERE recording_id = $1`, live.RecordingID).Scan(
		&call.tStatus, &call.tSummaryStat); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return u, err
	}
	return u, nil
}

// existingTranscription reports whether the recording is already transcribed, pending, or
// has a live charge, and if so sets res's Existing outcome and statuses.
func existingTranscription(res *TranscribeResult, call transcribeCall) bool {
	if res.Charge == nil && (call.tStatus == nil || *call.tStatus == "failed") {
		return false
	}
	res.Outcome = TranscribeExisting
	res.Status, res.SummaryStatus = "pending", "pending"
	if call.tStatus != nil {
		res.Status, res.SummaryStatus = *call.tStatus, *call.tSummaryStat
	}
	return true
}

// automaticSkipReason is why an automatic transcription of this recording must not happen,
// or "" when it may.
func automaticSkipReason(recKind string, privacy *bool, hasAutoKey bool) string {
	switch {
	case recKind != "call":
		return SkipNotCallRecording
	case privacy != nil && *privacy:
		return SkipPrivacyMode
	case !hasAutoKey:
		return SkipNoAutoTranscribeKey
	}
	return ""
}

// priceTranscription sets res's price inputs and estimate, as the estimate quotes them.
func priceTranscription(res *TranscribeResult, call transcribeCall, acct transcribeAccount, usage transcribeUsage) {
	res.Price = billing.Input{
		Minutes: billing.MinutesFor(*call.recSeconds, *call.recBytes), RatePencePerMin: acct.rate,
		PlanAllowanceMinutes: acct.plan.MonthlyAllowanceMinutes, AllowanceUsedMinutes: usage.allowanceUsed, BundleMinutes: acct.bundle,
		BalancePence: acct.balance, SpentTodayPence: usage.spentToday, DailySpendLimitPence: acct.dailyLimit,
	}
	res.Estimate = billing.Estimate(res.Price)
}

// writeTranscriptionCharge makes every write in one round trip: the charge, the allowance,
// the bundle and balance with their ledger entry (balance_after is exact: the row is locked),
// the pending transcript.
func writeTranscriptionCharge(ctx context.Context, tx pgx.Tx, req TranscribeRequest, res *TranscribeResult, call transcribeCall,
	acct transcribeAccount) (TranscriptionCharge, error) {
	c := res.Estimate
	charge := TranscriptionCharge{PublicID: NewPublicID(PrefixCharge), AccountID: req.AccountID, AccountPublicID: acct.publicID,
		CallID: res.CallID, CallPublicID: res.CallPublicID, RecordingID: *call.recID, RecordingPublicID: *call.recPublicID,
		Minutes: c.Minutes, AllowanceMinutes: c.AllowanceMinutes, BundleMinutes: c.BundleMinutes, AmountPence: c.CostPence,
		Status: ChargeCharged, Automatic: req.Automatic, CreatedAt: req.Now}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO transcription_charges (account_id, public_id, call_id, recording_id, minutes,
			allowance_minutes, bundle_minutes, amount_pence, spend_day, automatic, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::date, $10, $11) RETURNING id`,
		charge.AccountID, charge.PublicID, charge.CallID, charge.RecordingID, charge.Minutes, charge.AllowanceMinutes,
		charge.BundleMinutes, charge.AmountPence, pgDate(acct.day), charge.Automatic, req.Now).QueryRow(func(row pgx.Row) error {
		return row.Scan(&charge.ID)
	})
	if c.AllowanceMinutes > 0 {
		b.Queue(`INSERT INTO transcription_allowance_usage AS u (account_id, month, minutes_used)
			VALUES ($1, $2::date, $3) ON CONFLICT (account_id, month) DO UPDATE SET minutes_used = u.minutes_used + EXCLUDED.minutes_used`,
			req.AccountID, pgDate(acct.month), c.AllowanceMinutes)
	}
	if c.BundleMinutes > 0 || c.CostPence > 0 {
		b.Queue(`UPDATE accounts SET bundle_minutes = bundle_minutes - $2, balance_pence = balance_pence - $3 WHERE id = $1`,
			req.AccountID, c.BundleMinutes, c.CostPence)
	}
	if c.CostPence > 0 {
		note := fmt.Sprintf("Transcription of call %s (%d %s at %dp)", res.CallPublicID, c.BalanceMinutes, minutesWord(c.BalanceMinutes), acct.rate)
		b.Queue(`INSERT INTO ledger_entries (account_id, type, amount_pence, balance_after_pence, note, reference, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, req.AccountID, LedgerCharge, -c.CostPence, acct.balance-c.CostPence, note, charge.PublicID, req.Now)
	}
	b.Queue(`WITH t AS (
			INSERT INTO transcripts AS t (account_id, recording_id, call_id, status, summary_status, minutes, rated_amount_pence, created_at)
			VALUES ($1, $2, $3, 'pending', 'pending', $4, $5, $6)
			ON CONFLICT (recording_id) DO UPDATE SET status = 'pending', summary_status = 'pending', text = '', language = '',
				minutes = EXCLUDED.minutes, rated_amount_pence = EXCLUDED.rated_amount_pence, summary = NULL, intent = NULL,
				sentiment = NULL, urgency = NULL, action_items = '{}', callback_number = NULL, failure_reason = NULL,
				created_at = EXCLUDED.created_at, completed_at = NULL
			RETURNING id)
		DELETE FROM transcript_segments WHERE transcript_id IN (SELECT id FROM t)`,
		req.AccountID, *call.recID, res.CallID, c.Minutes, c.CostPence, req.Now)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return charge, fmt.Errorf("record the transcription charge: %w", err)
	}
	return charge, nil
}

func minutesWord(n int) string {
	if n == 1 {
		return "minute"
	}
	return "minutes"
}

// GetTranscriptionCharge reads a charge by public id (any account: controllers and sweepers
// act for every account).
func (s *Store) GetTranscriptionCharge(ctx context.Context, publicID string) (TranscriptionCharge, error) {
	return scanCharge(s.pool.QueryRow(ctx, chargeSelect+` WHERE ch.public_id = $1`, publicID))
}

// ChargesWithoutJob lists live charges made before createdBefore whose job has not been
// recorded as created (a crash between the charge and the job), oldest first.
func (s *Store) ChargesWithoutJob(ctx context.Context, createdBefore time.Time, limit int) ([]TranscriptionCharge, error) {
	rows, err := s.pool.Query(ctx, chargeSelect+` WHERE ch.job_created_at IS NULL AND ch.status = 'charged' AND ch.created_at < $1
		ORDER BY ch.created_at LIMIT $2`, createdBefore, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (TranscriptionCharge, error) { return scanCharge(r) })
}

// MarkTranscriptionJobCreated records that the charge's TranscriptionJob exists.
func (s *Store) MarkTranscriptionJobCreated(ctx context.Context, chargeID int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE transcription_charges SET job_created_at = coalesce(job_created_at, $2) WHERE id = $1`, chargeID, at)
	return err
}

// RefundTranscription gives back what a finally failed transcription took: the charge becomes
// refunded (so it no longer counts toward the day's spending), allowance and bundle minutes
// return, the balance part comes back with a refund ledger entry, and the transcript is
// marked failed with reason. Refunding twice changes nothing (refunded false); a transcript
// already complete is not refunded (ErrTranscriptCompleted).
func (s *Store) RefundTranscription(ctx context.Context, chargePublicID, reason string, now time.Time) (refunded bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var accountID int64
		if err := tx.QueryRow(ctx, `SELECT account_id FROM transcription_charges WHERE public_id = $1`, chargePublicID).Scan(&accountID); err != nil {
			return notFound(err)
		}
		// The account first, as a charge takes it: no lock-order deadlock.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
			return err
		}
		var (
			chargeID, callID, recordingID int64
			allowance, bundle             int
			amount                        int64
			spendDay                      time.Time
			status                        string
			callPublicID                  string
		)
		if err := tx.QueryRow(ctx, `SELECT ch.id, ch.call_id, ch.recording_id, ch.allowance_minutes, ch.bundle_minutes,
				ch.amount_pence, ch.spend_day, ch.status, c.public_id
			FROM transcription_charges ch JOIN calls c ON c.id = ch.call_id
			WHERE ch.public_id = $1 FOR UPDATE OF ch`, chargePublicID).Scan(
			&chargeID, &callID, &recordingID, &allowance, &bundle, &amount, &spendDay, &status, &callPublicID); err != nil {
			return err
		}
		if status == ChargeRefunded {
			return nil
		}
		var tStatus string
		err := tx.QueryRow(ctx, `SELECT status FROM transcripts WHERE recording_id = $1 FOR UPDATE`, recordingID).Scan(&tStatus)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if tStatus == "completed" {
			return ErrTranscriptCompleted
		}
		if _, err := tx.Exec(ctx, `UPDATE transcription_charges SET status = 'refunded' WHERE id = $1`, chargeID); err != nil {
			return err
		}
		if allowance > 0 {
			if _, err := tx.Exec(ctx, `UPDATE transcription_allowance_usage SET minutes_used = greatest(minutes_used - $3, 0)
				WHERE account_id = $1 AND month = date_trunc('month', $2::date)::date`, accountID, pgDate(spendDay), allowance); err != nil {
				return err
			}
		}
		if bundle > 0 {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET bundle_minutes = bundle_minutes + $2 WHERE id = $1`, accountID, bundle); err != nil {
				return err
			}
		}
		if amount > 0 {
			note := fmt.Sprintf("Refund: transcription of call %s failed", callPublicID)
			if _, err := applyLedgerEntry(ctx, tx, accountID, LedgerRefund, amount, note, chargePublicID, now); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE transcripts SET status = 'failed', summary_status = 'failed', failure_reason = $2,
				completed_at = $3 WHERE recording_id = $1`, recordingID, reason, now); err != nil {
			return err
		}
		refunded = true
		return nil
	})
	return refunded, err
}

// TranscriptionWork is what a TranscriptionJob needs from the database.
type TranscriptionWork struct {
	Charge TranscriptionCharge
	// Recording audio; RecordingDeleted when it was deleted meanwhile.
	StorageKey       string
	ContentType      string
	RecordingKind    string
	RecordingDeleted bool
	CallerE164       string
	// The transcript as stored now.
	TranscriptStatus string
	SummaryStatus    string
	Text             string
	Language         string
}

// GetTranscriptionWork reads a job's charge, recording and transcript.
func (s *Store) GetTranscriptionWork(ctx context.Context, chargePublicID string) (TranscriptionWork, error) {
	var w TranscriptionWork
	c, err := s.GetTranscriptionCharge(ctx, chargePublicID)
	if err != nil {
		return w, err
	}
	w.Charge = c
	err = s.pool.QueryRow(ctx, `SELECT r.storage_key, r.content_type, r.kind, r.deleted_at IS NOT NULL, c.from_e164,
			coalesce(t.status, ''), coalesce(t.summary_status, ''), coalesce(t.text, ''), coalesce(t.language, '')
		FROM recordings r JOIN calls c ON c.id = $2 LEFT JOIN transcripts t ON t.recording_id = r.id
		WHERE r.id = $1`, c.RecordingID, c.CallID).Scan(&w.StorageKey, &w.ContentType, &w.RecordingKind, &w.RecordingDeleted,
		&w.CallerE164, &w.TranscriptStatus, &w.SummaryStatus, &w.Text, &w.Language)
	return w, notFound(err)
}

// TranscriptText is the speech-to-text result of a job.
type TranscriptText struct {
	Text     string
	Language string
	Segments []TranscriptSegment
}

// lockJobTranscript locks the transcript of a charge's recording and reports the charge's status.
func lockJobTranscript(ctx context.Context, tx pgx.Tx, chargePublicID string) (transcriptID int64, status, summaryStatus string, ch TranscriptionCharge, err error) {
	ch, err = scanCharge(tx.QueryRow(ctx, chargeSelect+` WHERE ch.public_id = $1`, chargePublicID))
	if err != nil {
		return 0, "", "", ch, err
	}
	err = tx.QueryRow(ctx, `SELECT id, status, summary_status FROM transcripts WHERE recording_id = $1 FOR UPDATE`,
		ch.RecordingID).Scan(&transcriptID, &status, &summaryStatus)
	if err != nil {
		return 0, "", "", ch, notFound(err)
	}
	if ch.Status == ChargeRefunded {
		return 0, "", "", ch, ErrChargeRefunded
	}
	return transcriptID, status, summaryStatus, ch, nil
}

// SaveTranscriptText stores a job's transcript text, language and segments and marks the
// transcript completed (its summary still pending). A transcript already completed is left
// as it is (saved false): a job's text is written once.
func (s *Store) SaveTranscriptText(ctx context.Context, chargePublicID string, in TranscriptText, now time.Time) (saved bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		id, status, _, _, err := lockJobTranscript(ctx, tx, chargePublicID)
		if err != nil {
			return err
		}
		if status == "completed" {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE transcripts SET status = 'completed', text = $2, language = $3, completed_at = $4,
				failure_reason = NULL WHERE id = $1`, id, in.Text, in.Language, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM transcript_segments WHERE transcript_id = $1`, id); err != nil {
			return err
		}
		rows := make([][]any, len(in.Segments))
		for i, sg := range in.Segments {
			rows[i] = []any{id, i, sg.StartSeconds, sg.EndSeconds, sg.Speaker, sg.Text}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"transcript_segments"},
			[]string{"transcript_id", "position", "start_seconds", "end_seconds", "speaker", "text"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		saved = true
		return nil
	})
	return saved, err
}

// TranscriptSummary is the AI summary of a job; Status is completed, or failed when no
// summary could be made (the other fields are then ignored).
type TranscriptSummary struct {
	Status         string
	Summary        string
	Intent         string
	Sentiment      string
	Urgency        string
	ActionItems    []string
	CallbackNumber *string
}

// summarySnippetLength bounds a to-do's summary_snippet.
const summarySnippetLength = 160

// CompleteTranscriptSummary stores a job's summary and finishes the transcript, in one
// transaction guarded by the transcript's summary status (a job completes once):
// the summary fields, a to-do for each action item, and for a recorded call (not a voicemail)
// the transcript.ready event in the outbox. done is false when it had already been completed.
func (s *Store) CompleteTranscriptSummary(ctx context.Context, chargePublicID string, in TranscriptSummary, links events.Links, now time.Time) (done bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		id, status, summaryStatus, ch, err := lockJobTranscript(ctx, tx, chargePublicID)
		if err != nil {
			return err
		}
		if status != "completed" {
			return fmt.Errorf("the transcript of charge %s is %s, not completed: store its text first", chargePublicID, status)
		}
		if summaryStatus != "pending" && summaryStatus != "processing" {
			return nil
		}
		if in.Status == "completed" {
			items := in.ActionItems
			if items == nil {
				items = []string{}
			}
			if _, err := tx.Exec(ctx, `UPDATE transcripts SET summary_status = 'completed', summary = $2, intent = $3, sentiment = $4,
					urgency = $5, action_items = $6, callback_number = $7 WHERE id = $1`,
				id, in.Summary, in.Intent, in.Sentiment, in.Urgency, items, in.CallbackNumber); err != nil {
				return err
			}
			snippet := []rune(in.Summary)
			if len(snippet) > summarySnippetLength {
				snippet = append(snippet[:summarySnippetLength-1], '…')
			}
			for _, item := range items {
				if _, err := tx.Exec(ctx, `INSERT INTO tasks (account_id, public_id, call_id, text, callback_e164, sentiment, urgency,
						summary_snippet, created_at, updated_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
					ch.AccountID, NewPublicID(PrefixTask), ch.CallID, item, in.CallbackNumber, in.Sentiment, in.Urgency,
					string(snippet), now); err != nil {
					return err
				}
			}
		} else {
			if _, err := tx.Exec(ctx, `UPDATE transcripts SET summary_status = 'failed' WHERE id = $1`, id); err != nil {
				return err
			}
		}
		var kind string
		if err := tx.QueryRow(ctx, `SELECT kind FROM recordings WHERE id = $1`, ch.RecordingID).Scan(&kind); err != nil {
			return err
		}
		for _, typ := range events.Produced(events.CallChange{What: events.SummaryFinished, RecordingKind: kind}) {
			if _, err := queueCallEvent(ctx, tx, links, typ, ch.CallID, "", now); err != nil {
				return err
			}
		}
		done = true
		return nil
	})
	return done, err
}

// NotifyAccountOwners adds a notification for every owner still on the account.
func (s *Store) NotifyAccountOwners(ctx context.Context, accountID int64, typ, title, body, url string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO notifications (id, account_id, user_id, type, title, body, url, created_at)
		SELECT gen_random_uuid(), $1, u.id, $2, $3, $4, $5, $6
		FROM users u WHERE u.account_id = $1 AND u.role = 'owner' AND u.left_at IS NULL`, accountID, typ, title, body, url, at)
	return err
}
