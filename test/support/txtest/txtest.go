// Package txtest makes recorded calls and funded accounts for the transcription tests.
package txtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// TB is the part of testing.TB (and GinkgoT()) used here.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

var seq atomic.Int64

// Call is a call made by RecordedCall.
type Call struct {
	ID                int64
	PublicID          string
	NumberID          int64
	RecordingID       int64
	RecordingPublicID string
	StorageKey        string
}

// CallOptions shape a recorded call; the zero value is a 60-second recorded call on a new
// number, not in privacy mode, from +447700900123.
type CallOptions struct {
	Seconds int
	// Kind is the recording kind: call (default) or voicemail; "none" for no recording.
	Kind        string
	PrivacyMode bool
	// NumberID reuses a number instead of making one.
	NumberID int64
	From     string
	// StorageKey of the audio (default acct/<n>.wav); the audio itself is not stored.
	StorageKey string
}

// RecordedCall adds a number (unless given), an answered call and its recording.
func RecordedCall(tb TB, st *store.Store, accountID int64, o CallOptions) Call {
	tb.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	if o.Seconds == 0 {
		o.Seconds = 60
	}
	if o.Kind == "" {
		o.Kind = "call"
	}
	if o.From == "" {
		o.From = "+447700900123"
	}
	var c Call
	c.NumberID = o.NumberID
	if c.NumberID == 0 {
		num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: accountID, E164: fmt.Sprintf("+4420%08d", n),
			Label: "Main line", PrivacyModeEnabled: o.PrivacyMode})
		if err != nil {
			tb.Fatalf("create number: %v", err)
		}
		c.NumberID = num.ID
	}
	disposition := "answered"
	if o.Kind == "voicemail" {
		disposition = "voicemail"
	}
	id, pid, err := st.CreateCall(ctx, store.NewCall{AccountID: accountID, NumberID: &c.NumberID, FromE164: o.From,
		ToE164: "+442030000000", Disposition: disposition, StartedAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Second),
		DurationSeconds: o.Seconds, TalkSeconds: o.Seconds})
	if err != nil {
		tb.Fatalf("create call: %v", err)
	}
	c.ID, c.PublicID = id, pid
	if o.Kind == "none" {
		return c
	}
	if o.StorageKey == "" {
		o.StorageKey = fmt.Sprintf("acct%d/rec%d.wav", accountID, n)
	}
	rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: accountID, CallID: &id, Kind: o.Kind,
		StorageKey: o.StorageKey, DurationSeconds: o.Seconds, SizeBytes: int64(o.Seconds) * 16000})
	if err != nil {
		tb.Fatalf("create recording: %v", err)
	}
	c.RecordingID, c.RecordingPublicID, c.StorageKey = rec.ID, rec.PublicID, o.StorageKey
	return c
}

// Fund tops the balance up by pence and sets the other money settings of the account.
func Fund(tb TB, st *store.Store, accountID, pence int64, settings store.AccountSettings) {
	tb.Helper()
	ctx := context.Background()
	if pence > 0 {
		if _, err := st.TopUp(ctx, accountID, pence, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
			tb.Fatalf("top up: %v", err)
		}
	}
	if _, err := st.UpdateAccount(ctx, accountID, settings); err != nil {
		tb.Fatalf("update account: %v", err)
	}
}

// UseAllowance records minutes of this month's allowance as already used (month in UTC's
// calendar and the account's; tests run accounts in Europe/London, close enough away from
// month ends, or pass the month).
func UseAllowance(tb TB, st *store.Store, accountID int64, month time.Time, minutes int) {
	tb.Helper()
	if _, err := storetest.SQL(tb, st).Exec(context.Background(), `INSERT INTO transcription_allowance_usage (account_id, month, minutes_used)
		VALUES ($1, $2::date, $3) ON CONFLICT (account_id, month) DO UPDATE SET minutes_used = EXCLUDED.minutes_used`,
		accountID, month.Format(time.DateOnly), minutes); err != nil {
		tb.Fatalf("use allowance: %v", err)
	}
}

// Money is an account's money after the fact.
type Money struct {
	BalancePence  int64
	LedgerSum     int64
	BundleMinutes int
	LedgerEntries int
}

// MoneyOf reads the account's balance, the sum of its ledger and its bundle minutes.
func MoneyOf(tb TB, st *store.Store, accountID int64) Money {
	tb.Helper()
	var m Money
	if err := storetest.SQL(tb, st).QueryRow(context.Background(), `SELECT a.balance_pence,
			coalesce((SELECT sum(amount_pence) FROM ledger_entries WHERE account_id = a.id), 0)::bigint,
			a.bundle_minutes, (SELECT count(*) FROM ledger_entries WHERE account_id = a.id)
		FROM accounts a WHERE a.id = $1`, accountID).Scan(&m.BalancePence, &m.LedgerSum, &m.BundleMinutes, &m.LedgerEntries); err != nil {
		tb.Fatalf("read money: %v", err)
	}
	return m
}
