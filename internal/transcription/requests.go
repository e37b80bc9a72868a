package transcription

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/period"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// RefusedError is a transcription the user or the account may not start (the spec's 403).
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return e.Message }

// refusal is why u may not start a transcription on acct; nil when they may.
func refusal(u store.User, acct store.Account) error {
	if u.Role != "owner" && !u.CanTranscribe {
		return &RefusedError{"This user is no longer allowed to start transcriptions; the account owner can allow it again."}
	}
	switch plans.TranscriptionGate(acct.Plan, acct.TranscriptionDisabled) {
	case plans.TranscriptionNotInPlan:
		return &RefusedError{"The account's plan does not include transcription."}
	case plans.TranscriptionSwitchedOff:
		return &RefusedError{"Transcription is switched off for this account."}
	}
	return nil
}

// Request starts a transcription of a call for a person (an API key's user or a portal user):
// it refuses (RefusedError) a user without the allowance or an account whose plan lacks
// transcription or has it switched off, and otherwise is Start. A refusal for the balance or
// the daily limit is the result's TranscribeRefused outcome (the spec's 402).
func (s *Service) Request(ctx context.Context, u store.User, acct store.Account, callPublicID string,
	claim *store.IdempotencyClaim) (store.TranscribeResult, error) {
	if err := refusal(u, acct); err != nil {
		return store.TranscribeResult{}, err
	}
	return s.Start(ctx, store.TranscribeRequest{AccountID: acct.ID, CallPublicID: callPublicID, Idempotency: claim})
}

// Quote is what a transcription of a recording would cost now (the API's estimate).
type Quote struct {
	// Available: the plan has transcription and it is switched on for the account.
	Available bool
	Charge    billing.Charge
	Inputs    store.TranscriptionPriceInputs
}

// Estimate prices a transcription of rec for acct now: the allowance is per calendar month
// and the spending limit per day, both in the account's time zone.
func (s *Service) Estimate(ctx context.Context, acct store.Account, rec store.Recording) (Quote, error) {
	now := s.Clock.Now().In(period.Location(acct.TimeZone))
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	in, err := s.Store.GetTranscriptionPriceInputs(ctx, acct.ID, rec.ID, month, today)
	if err != nil {
		return Quote{}, err
	}
	plan, _ := plans.Lookup(in.Plan) // an unknown plan: no allowance, and not available
	charge := billing.Estimate(billing.Input{
		Minutes:              billing.MinutesFor(rec.DurationSeconds, rec.SizeBytes),
		RatePencePerMin:      in.RatePencePerMin,
		PlanAllowanceMinutes: plan.MonthlyAllowanceMinutes,
		AllowanceUsedMinutes: in.AllowanceUsedMinutes,
		BundleMinutes:        in.BundleMinutes,
		BalancePence:         in.BalancePence,
		SpentTodayPence:      in.SpentTodayPence,
		DailySpendLimitPence: in.DailySpendLimitPence,
	})
	return Quote{Available: plans.TranscriptionGate(in.Plan, in.TranscriptionDisabled) == "", Charge: charge, Inputs: in}, nil
}
