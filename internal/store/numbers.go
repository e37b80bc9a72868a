package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// NumberRow is one of an account's numbers as listed.
type NumberRow struct {
	ID                int64
	PublicID          string
	E164              string
	Label             string
	Status            string
	SMSCapable        bool
	SMSReady          bool
	CLIEligible       bool
	IsDefaultCallerID bool
}

// BusinessProfileName names the business profile a number belongs to.
type BusinessProfileName struct {
	PublicID string
	Name     string
}

// NumberDetail is a number with its ownership, business profile and caller-ID settings.
type NumberDetail struct {
	NumberRow
	Ownership       string
	BusinessProfile *BusinessProfileName // nil when the number has none
	ReleaseAt       *time.Time
	CLIVerified     bool
	ForwardCLIMode  string  // caller, own or platform
	PlatformE164    *string // the platform's number shown in platform mode
}

const numberRowColumns = `n.id, n.public_id, n.e164, n.label, n.status, n.sms_capable, n.sms_ready, n.cli_eligible, n.is_default_caller_id`

func scanNumberRow(dst *NumberRow) []any {
	return []any{&dst.ID, &dst.PublicID, &dst.E164, &dst.Label, &dst.Status, &dst.SMSCapable, &dst.SMSReady, &dst.CLIEligible, &dst.IsDefaultCallerID}
}

// ListNumbers returns the account's numbers that are not released, ordered by number.
func (s *Store) ListNumbers(ctx context.Context, accountID int64) ([]NumberRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+numberRowColumns+` FROM numbers n
		WHERE n.account_id = $1 AND n.status <> 'released' ORDER BY n.e164, n.id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NumberRow, error) {
		var n NumberRow
		return n, r.Scan(scanNumberRow(&n)...)
	})
}

// GetNumber returns one of the account's numbers (released ones included: their ids stay valid).
func (s *Store) GetNumber(ctx context.Context, accountID int64, publicID string) (NumberDetail, error) {
	var n NumberDetail
	var bpID, bpName *string
	err := s.pool.QueryRow(ctx, `SELECT `+numberRowColumns+`, n.ownership, bp.public_id, bp.name, n.release_at,
			n.cli_verified, n.forward_cli_mode, n.platform_e164
		FROM numbers n LEFT JOIN business_profiles bp ON bp.id = n.business_profile_id
		WHERE n.account_id = $1 AND n.public_id = $2`, accountID, publicID).Scan(
		append(scanNumberRow(&n.NumberRow), &n.Ownership, &bpID, &bpName, &n.ReleaseAt, &n.CLIVerified, &n.ForwardCLIMode, &n.PlatformE164)...)
	if err != nil {
		return NumberDetail{}, notFound(err)
	}
	if bpID != nil {
		n.BusinessProfile = &BusinessProfileName{PublicID: *bpID, Name: *bpName}
	}
	return n, nil
}

// ForwardTarget is where a forwarding route rings.
type ForwardTarget struct {
	Kind        string
	E164        string
	StaffLabel  string
	RingSeconds int
}

// Window is a weekly time window; days are 0 (Sunday) to 6, times HH:MM.
type Window struct {
	Days  []int
	Start string
	End   string
}

// RouteSettings are how a route answers a call.
type RouteSettings struct {
	Mode              string
	RecordingEnabled  bool
	VoicemailFallback bool
	Whisper           bool
	AICover           string
	ForwardTargets    []ForwardTarget
	IVROptions        []json.RawMessage // menu options, kept as the platform sends them
}

// Route kinds: a number has one default route, schedules in order, and at most one override.
const (
	RouteDefault  = "default"
	RouteSchedule = "schedule"
	RouteOverride = "override"
)

// NumberRoute is one stored route of a number.
type NumberRoute struct {
	Kind     string // RouteDefault, RouteSchedule or RouteOverride
	Name     string // schedules only
	Windows  []Window
	Settings RouteSettings
	Until    *time.Time // overrides only; nil: until replaced
}

// RoutedNumber is the part of a number that routing shows beside its routes.
type RoutedNumber struct {
	PublicID                      string
	E164                          string
	Status                        string
	VoicemailTranscriptionEnabled bool
	CallTranscriptionEnabled      bool
	PrivacyModeEnabled            bool
}

// NumberRouting is a number with the routes that apply: the default, the schedules in order, and
// the override while it lasts.
type NumberRouting struct {
	Number RoutedNumber
	Routes []NumberRoute
}

// The JSON documents of the number_routes columns windows, forward_targets and ivr.
type (
	windowDocument struct {
		Days  []int  `json:"days"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	forwardTargetDocument struct {
		Kind        string `json:"kind"`
		E164        string `json:"e164"`
		StaffLabel  string `json:"staff_label"`
		RingSeconds int    `json:"ring_seconds"`
	}
	ivrDocument struct {
		Options []json.RawMessage `json:"options"`
	}
)

// GetRouting reads a number's routing as it stands at now. An override is left out once its end
// (until) has passed: it no longer routes calls.
func (s *Store) GetRouting(ctx context.Context, accountID int64, publicID string, now time.Time) (NumberRouting, error) {
	var r NumberRouting
	var numberID int64
	err := s.pool.QueryRow(ctx, `SELECT id, public_id, e164, status, voicemail_transcription_enabled,
			call_transcription_enabled, privacy_mode_enabled
		FROM numbers WHERE account_id = $1 AND public_id = $2`, accountID, publicID).Scan(
		&numberID, &r.Number.PublicID, &r.Number.E164, &r.Number.Status, &r.Number.VoicemailTranscriptionEnabled,
		&r.Number.CallTranscriptionEnabled, &r.Number.PrivacyModeEnabled)
	if err != nil {
		return NumberRouting{}, notFound(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, name, windows, mode, recording_enabled, voicemail_fallback, whisper,
			ai_cover, forward_targets, ivr, override_until
		FROM number_routes WHERE number_id = $1 AND (kind <> 'override' OR override_until IS NULL OR override_until > $2)
		ORDER BY kind, position, id`, numberID, now)
	if err != nil {
		return NumberRouting{}, err
	}
	r.Routes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (NumberRoute, error) {
		var rt NumberRoute
		var windows []windowDocument
		var targets []forwardTargetDocument
		var ivr ivrDocument
		st := &rt.Settings
		if err := row.Scan(&rt.Kind, &rt.Name, &windows, &st.Mode, &st.RecordingEnabled, &st.VoicemailFallback, &st.Whisper,
			&st.AICover, &targets, &ivr, &rt.Until); err != nil {
			return NumberRoute{}, err
		}
		for _, w := range windows {
			rt.Windows = append(rt.Windows, Window(w))
		}
		for _, t := range targets {
			st.ForwardTargets = append(st.ForwardTargets, ForwardTarget(t))
		}
		st.IVROptions = ivr.Options
		if rt.Until != nil {
			rt.Until = new(rt.Until.UTC())
		}
		return rt, nil
	})
	return r, err
}

// NewNumber is a number to add to an account.
type NewNumber struct {
	AccountID                     int64
	E164                          string
	Label                         string
	BusinessProfile               string // name; created when not empty
	SMSCapable, SMSReady          bool
	CLIEligible, CLIVerified      bool
	IsDefaultCallerID             bool
	VoicemailTranscriptionEnabled bool
	CallTranscriptionEnabled      bool
	PrivacyModeEnabled            bool
	Routes                        []NumberRoute
}

// CreateNumber adds a number with its routes in one transaction.
func (s *Store) CreateNumber(ctx context.Context, in NewNumber) (NumberRow, error) {
	var out NumberRow
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var bpID *int64
		if in.BusinessProfile != "" {
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO business_profiles (account_id, public_id, name) VALUES ($1, $2, $3) RETURNING id`,
				in.AccountID, NewPublicID(PrefixBusinessProfile), in.BusinessProfile).Scan(&id); err != nil {
				return err
			}
			bpID = &id
		}
		pid := NewPublicID(PrefixNumber)
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO numbers (account_id, public_id, e164, label, business_profile_id, sms_capable,
				sms_ready, cli_eligible, cli_verified, is_default_caller_id, voicemail_transcription_enabled,
				call_transcription_enabled, privacy_mode_enabled)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			in.AccountID, pid, in.E164, in.Label, bpID, in.SMSCapable, in.SMSReady, in.CLIEligible, in.CLIVerified,
			in.IsDefaultCallerID, in.VoicemailTranscriptionEnabled, in.CallTranscriptionEnabled, in.PrivacyModeEnabled).Scan(&id); err != nil {
			return err
		}
		if err := insertRoutes(ctx, tx, id, in.Routes); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT `+numberRowColumns+` FROM numbers n WHERE n.id = $1`, id).Scan(scanNumberRow(&out)...)
	})
	return out, err
}

// insertRoutes adds routes to a number, keeping their order as positions.
func insertRoutes(ctx context.Context, tx pgx.Tx, numberID int64, routes []NumberRoute) error {
	for i, rt := range routes {
		st := rt.Settings
		windows := make([]windowDocument, 0, len(rt.Windows))
		for _, w := range rt.Windows {
			windows = append(windows, windowDocument(w))
		}
		targets := make([]forwardTargetDocument, 0, len(st.ForwardTargets))
		for _, t := range st.ForwardTargets {
			targets = append(targets, forwardTargetDocument(t))
		}
		ivr := ivrDocument{Options: st.IVROptions}
		if ivr.Options == nil {
			ivr.Options = []json.RawMessage{}
		}
		aiCover := st.AICover
		if aiCover == "" {
			aiCover = "off"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO number_routes (number_id, kind, position, name, windows, mode,
				recording_enabled, voicemail_fallback, whisper, ai_cover, forward_targets, ivr, override_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			numberID, rt.Kind, i, rt.Name, windows, st.Mode, st.RecordingEnabled, st.VoicemailFallback,
			st.Whisper, aiCover, targets, ivr, rt.Until); err != nil {
			return err
		}
	}
	return nil
}
