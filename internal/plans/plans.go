// Package plans is the catalogue of plans and add-ons and what each allows.
package plans

import "fmt"

// Plan names as stored on accounts.
const (
	Starter  = "starter"
	Team     = "team"
	Business = "business"
)

// AddonIntegrations is the add-on that opens the API's data operations.
const AddonIntegrations = "integrations"

// Plan describes what a plan includes.
type Plan struct {
	Name string
	// IntegrationsIncluded: the plan has Integrations without the add-on.
	IntegrationsIncluded bool
	// IntegrationsAddable: the add-on can be bought on this plan.
	IntegrationsAddable bool
	// Transcription: the plan can transcribe calls at all.
	Transcription bool
	// MonthlyAllowanceMinutes of transcription included each calendar month.
	MonthlyAllowanceMinutes int
}

var catalogue = map[string]Plan{
	Starter:  {Name: Starter, Transcription: false},
	Team:     {Name: Team, IntegrationsAddable: true, Transcription: true, MonthlyAllowanceMinutes: 60},
	Business: {Name: Business, IntegrationsIncluded: true, IntegrationsAddable: true, Transcription: true, MonthlyAllowanceMinutes: 300},
}

// Names lists the plans.
var Names = []string{Starter, Team, Business}

// Lookup returns a plan by name.
func Lookup(name string) (Plan, error) {
	p, ok := catalogue[name]
	if !ok {
		return Plan{}, fmt.Errorf("unknown plan %q (want one of %v)", name, Names)
	}
	return p, nil
}

// PricingURL is where an integrator learns how to get Integrations.
const PricingURL = "https://switchboard.dev/pricing#integrations"

// Refusal reasons of the Integrations gate (spec: Integrations add-on refusal).
const (
	ReasonAddonRequired    = "addon_required"
	ReasonPlanRequired     = "plan_required"
	ReasonAccountInactive  = "account_inactive"
	ReasonPlatformDisabled = "platform_disabled"
)

// IntegrationsGate decides whether an account may use Integrations operations.
// It returns "" when allowed, else the refusal reason. The checks run from the
// broadest cause to the narrowest so the reason names what the customer must fix.
func IntegrationsGate(plan string, addons []string, accountStatus string, platformDisabled bool) string {
	switch {
	case platformDisabled:
		return ReasonPlatformDisabled
	case accountStatus != "active":
		return ReasonAccountInactive
	}
	p, err := Lookup(plan)
	if err != nil {
		return ReasonPlanRequired
	}
	if p.IntegrationsIncluded {
		return ""
	}
	for _, a := range addons {
		if a == AddonIntegrations && p.IntegrationsAddable {
			return ""
		}
	}
	if p.IntegrationsAddable {
		return ReasonAddonRequired
	}
	return ReasonPlanRequired
}

// RefusalMessages explain each Integrations refusal reason to people (clients act on the reason).
var RefusalMessages = map[string]string{
	ReasonAddonRequired:    "This operation needs the Integrations add-on. Add it to your plan to use it.",
	ReasonPlanRequired:     "This operation needs Integrations, which your plan does not offer. Change plan to use it.",
	ReasonAccountInactive:  "This account is paused, so Integrations operations are unavailable.",
	ReasonPlatformDisabled: "Integrations have been switched off for this account by the service.",
}

// Why an account may not transcribe (TranscriptionGate).
const (
	TranscriptionNotInPlan   = "not_in_plan"
	TranscriptionSwitchedOff = "switched_off"
)

// TranscriptionGate decides whether an account may transcribe at all: "" when it may, else
// why not — its plan has no transcription (an unknown plan has none), or transcription is
// switched off for the account. The plan is named first: switching it back on would not help.
func TranscriptionGate(plan string, switchedOff bool) string {
	if p, err := Lookup(plan); err != nil || !p.Transcription {
		return TranscriptionNotInPlan
	}
	if switchedOff {
		return TranscriptionSwitchedOff
	}
	return ""
}
