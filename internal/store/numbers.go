package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// NumberSummary is a row of GET /numbers.
type NumberSummary struct {
	ID                int64  `json:"-"`
	PublicID          string `json:"public_id"`
	E164              string `json:"e164"`
	Label             string `json:"label"`
	Status            string `json:"status"`
	SMSCapable        bool   `json:"sms_capable"`
	SMSReady          bool   `json:"sms_ready"`
	CLIEligible       bool   `json:"cli_eligible"`
	IsDefaultCallerID bool   `json:"is_default_caller_id"`
}

// BusinessProfileRef names the business profile a number belongs to.
type BusinessProfileRef struct {
	PublicID string `json:"public_id"`
	Name     string `json:"name"`
}

// ForwardCLI says what caller ID forwarded calls show.
type ForwardCLI struct {
	Mode         string  `json:"mode" enum:"caller,own,platform"`
	Shows        string  `json:"shows"`
	OwnE164      string  `json:"own_e164"`
	PlatformE164 *string `json:"platform_e164"`
	OwnAvailable bool    `json:"own_available"`
}

// Number is GET /numbers/{number}.
type Number struct {
	NumberSummary
	Ownership       string              `json:"ownership"`
	BusinessProfile *BusinessProfileRef `json:"business_profile" nullable:"true"`
	ReleaseAt       *time.Time          `json:"release_at"`
	CLIVerified     bool                `json:"cli_verified"`
	ForwardCLI      ForwardCLI          `json:"forward_cli"`
}

const numberSummaryColumns = `n.id, n.public_id, n.e164, n.label, n.status, n.sms_capable, n.sms_ready, n.cli_eligible, n.is_default_caller_id`

func scanNumberSummary(dst *NumberSummary) []any {
	return []any{&dst.ID, &dst.PublicID, &dst.E164, &dst.Label, &dst.Status, &dst.SMSCapable, &dst.SMSReady, &dst.CLIEligible, &dst.IsDefaultCallerID}
}

// ListNumbers returns the account's numbers that are not released, ordered by number.
func (s *Store) ListNumbers(ctx context.Context, accountID int64) ([]NumberSummary, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+numberSummaryColumns+` FROM numbers n
		WHERE n.account_id = $1 AND n.status <> 'released' ORDER BY n.e164, n.id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NumberSummary, error) {
		var n NumberSummary
		return n, r.Scan(scanNumberSummary(&n)...)
	})
}

// GetNumber returns one of the account's numbers (released ones included: their ids stay valid).
func (s *Store) GetNumber(ctx context.Context, accountID int64, publicID string) (Number, error) {
	var n Number
	var bpID, bpName *string
	var mode string
	err := s.Pool.QueryRow(ctx, `SELECT `+numberSummaryColumns+`, n.ownership, bp.public_id, bp.name, n.release_at,
			n.cli_verified, n.forward_cli_mode, n.platform_e164
		FROM numbers n LEFT JOIN business_profiles bp ON bp.id = n.business_profile_id
		WHERE n.account_id = $1 AND n.public_id = $2`, accountID, publicID).Scan(
		append(scanNumberSummary(&n.NumberSummary), &n.Ownership, &bpID, &bpName, &n.ReleaseAt, &n.CLIVerified, &mode, &n.ForwardCLI.PlatformE164)...)
	if err != nil {
		return Number{}, notFound(err)
	}
	if bpID != nil {
		n.BusinessProfile = &BusinessProfileRef{PublicID: *bpID, Name: *bpName}
	}
	n.ForwardCLI.Mode = mode
	n.ForwardCLI.OwnE164 = n.E164
	n.ForwardCLI.OwnAvailable = n.CLIVerified
	switch mode {
	case "own":
		n.ForwardCLI.Shows = n.E164
	case "platform":
		if n.ForwardCLI.PlatformE164 != nil {
			n.ForwardCLI.Shows = *n.ForwardCLI.PlatformE164
		}
	default:
		n.ForwardCLI.Shows = "caller"
	}
	return n, nil
}

// ForwardTarget is where a forwarding route rings.
type ForwardTarget struct {
	Kind        string `json:"kind"`
	E164        string `json:"e164"`
	StaffLabel  string `json:"staff_label"`
	RingSeconds int    `json:"ring_seconds"`
}

// IVR is a route's menu; option items are kept as the platform sends them.
type IVR struct {
	Options []json.RawMessage `json:"options"`
}

// Route is how a number answers.
type Route struct {
	Mode              string          `json:"mode"`
	RecordingEnabled  bool            `json:"recording_enabled"`
	VoicemailFallback bool            `json:"voicemail_fallback"`
	Whisper           bool            `json:"whisper"`
	AICover           string          `json:"ai_cover"`
	ForwardTargets    []ForwardTarget `json:"forward_targets"`
	IVR               IVR             `json:"ivr"`
}

// Window is a weekly time window; days are 0 (Sunday) to 6.
type Window struct {
	Days  []int  `json:"days"`
	Start string `json:"start" pattern:"^[0-2][0-9]:[0-5][0-9]$"`
	End   string `json:"end" pattern:"^[0-2][0-9]:[0-5][0-9]$"`
}

// ScheduledRoute is a route that applies in its windows; the first matching window wins.
type ScheduledRoute struct {
	Route
	Name    string   `json:"name"`
	Windows []Window `json:"windows"`
}

// OverrideRoute is a temporary route that replaces the others until it ends.
type OverrideRoute struct {
	Route
	Until *time.Time `json:"until"`
}

// RoutingNumber is the number part of GET /numbers/{number}/routing.
type RoutingNumber struct {
	PublicID                      string `json:"public_id"`
	E164                          string `json:"e164"`
	Status                        string `json:"status"`
	VoicemailTranscriptionEnabled bool   `json:"voicemail_transcription_enabled"`
	CallTranscriptionEnabled      bool   `json:"call_transcription_enabled"`
	PrivacyModeEnabled            bool   `json:"privacy_mode_enabled"`
}

// Routing is GET /numbers/{number}/routing.
type Routing struct {
	Number    RoutingNumber    `json:"number"`
	Default   *Route           `json:"default" nullable:"true"`
	Schedules []ScheduledRoute `json:"schedules"`
	Override  *OverrideRoute   `json:"override" nullable:"true"`
}

// GetRouting reads a number's routing as it stands at now. An override is shown only while it
// is set: one whose end (until) has passed no longer routes calls, so it is left out.
func (s *Store) GetRouting(ctx context.Context, accountID int64, publicID string, now time.Time) (Routing, error) {
	var r Routing
	var numberID int64
	err := s.Pool.QueryRow(ctx, `SELECT id, public_id, e164, status, voicemail_transcription_enabled,
			call_transcription_enabled, privacy_mode_enabled
		FROM numbers WHERE account_id = $1 AND public_id = $2`, accountID, publicID).Scan(
		&numberID, &r.Number.PublicID, &r.Number.E164, &r.Number.Status, &r.Number.VoicemailTranscriptionEnabled,
		&r.Number.CallTranscriptionEnabled, &r.Number.PrivacyModeEnabled)
	if err != nil {
		return Routing{}, notFound(err)
	}
	rows, err := s.Pool.Query(ctx, `SELECT kind, name, windows, mode, recording_enabled, voicemail_fallback, whisper,
			ai_cover, forward_targets, ivr, override_until
		FROM number_routes WHERE number_id = $1 ORDER BY kind, position, id`, numberID)
	if err != nil {
		return Routing{}, err
	}
	defer rows.Close()
	r.Schedules = []ScheduledRoute{}
	for rows.Next() {
		var kind, name string
		var windows []Window
		var until *time.Time
		var rt Route
		if err := rows.Scan(&kind, &name, &windows, &rt.Mode, &rt.RecordingEnabled, &rt.VoicemailFallback, &rt.Whisper,
			&rt.AICover, &rt.ForwardTargets, &rt.IVR, &until); err != nil {
			return Routing{}, err
		}
		if rt.ForwardTargets == nil {
			rt.ForwardTargets = []ForwardTarget{}
		}
		if rt.IVR.Options == nil {
			rt.IVR.Options = []json.RawMessage{}
		}
		switch kind {
		case "default":
			rt := rt
			r.Default = &rt
		case "schedule":
			if windows == nil {
				windows = []Window{}
			}
			r.Schedules = append(r.Schedules, ScheduledRoute{Route: rt, Name: name, Windows: windows})
		case "override":
			if until == nil {
				r.Override = &OverrideRoute{Route: rt}
			} else if until.After(now) {
				u := until.UTC()
				r.Override = &OverrideRoute{Route: rt, Until: &u}
			}
		}
	}
	return r, rows.Err()
}

// NewRoute is a route to store for a number (used by seeding and the platform).
type NewRoute struct {
	Kind    string // default, schedule, override
	Name    string
	Windows []Window
	Route   Route
	Until   *time.Time
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
	Routes                        []NewRoute
}

// CreateNumber adds a number with its routes in one transaction.
func (s *Store) CreateNumber(ctx context.Context, in NewNumber) (NumberSummary, error) {
	var out NumberSummary
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
		return tx.QueryRow(ctx, `SELECT `+numberSummaryColumns+` FROM numbers n WHERE n.id = $1`, id).Scan(scanNumberSummary(&out)...)
	})
	return out, err
}

// insertRoutes adds routes to a number, keeping their order as positions.
func insertRoutes(ctx context.Context, tx pgx.Tx, numberID int64, routes []NewRoute) error {
	for i, rt := range routes {
		targets := rt.Route.ForwardTargets
		if targets == nil {
			targets = []ForwardTarget{}
		}
		ivr := rt.Route.IVR
		if ivr.Options == nil {
			ivr.Options = []json.RawMessage{}
		}
		windows := rt.Windows
		if windows == nil {
			windows = []Window{}
		}
		aiCover := rt.Route.AICover
		if aiCover == "" {
			aiCover = "off"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO number_routes (number_id, kind, position, name, windows, mode,
				recording_enabled, voicemail_fallback, whisper, ai_cover, forward_targets, ivr, override_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			numberID, rt.Kind, i, rt.Name, windows, rt.Route.Mode, rt.Route.RecordingEnabled, rt.Route.VoicemailFallback,
			rt.Route.Whisper, aiCover, targets, ivr, rt.Until); err != nil {
			return err
		}
	}
	return nil
}
