package numbers

import (
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// Number is a number as the platform API and the admin commands answer it: every setting,
// and the account it belongs to.
type Number struct {
	PublicID                      string     `json:"public_id"`
	Account                       string     `json:"account"` // the account's public_id
	E164                          string     `json:"e164"`
	Status                        string     `json:"status"`
	Ownership                     string     `json:"ownership"`
	ReleaseAt                     *time.Time `json:"release_at"`
	CreatedAt                     time.Time  `json:"created_at"`
	Label                         string     `json:"label"`
	BusinessProfile               string     `json:"business_profile"` // name; empty for none
	SMSCapable                    bool       `json:"sms_capable"`
	SMSReady                      bool       `json:"sms_ready"`
	CLIEligible                   bool       `json:"cli_eligible"`
	CLIVerified                   bool       `json:"cli_verified"`
	IsDefaultCallerID             bool       `json:"is_default_caller_id"`
	ForwardCLIMode                string     `json:"forward_cli_mode"`
	PlatformE164                  *string    `json:"platform_e164"`
	VoicemailTranscriptionEnabled bool       `json:"voicemail_transcription_enabled"`
	CallTranscriptionEnabled      bool       `json:"call_transcription_enabled"`
	PrivacyModeEnabled            bool       `json:"privacy_mode_enabled"`
}

// Show shapes a number's row as the platform API and the admin commands answer it.
func Show(n store.PlatformNumber) Number {
	s := n.NumberSettings
	return Number{PublicID: n.PublicID, Account: n.Account, E164: n.E164, Status: n.Status, Ownership: n.Ownership,
		ReleaseAt: n.ReleaseAt, CreatedAt: n.CreatedAt, Label: s.Label, BusinessProfile: s.BusinessProfile,
		SMSCapable: s.SMSCapable, SMSReady: s.SMSReady, CLIEligible: s.CLIEligible, CLIVerified: s.CLIVerified,
		IsDefaultCallerID: s.IsDefaultCallerID, ForwardCLIMode: s.ForwardCLIMode, PlatformE164: s.PlatformE164,
		VoicemailTranscriptionEnabled: s.VoicemailTranscriptionEnabled, CallTranscriptionEnabled: s.CallTranscriptionEnabled,
		PrivacyModeEnabled: s.PrivacyModeEnabled}
}
