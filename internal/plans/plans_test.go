package plans

import "testing"

func TestIntegrationsGate(t *testing.T) {
	tests := []struct {
		name     string
		plan     string
		addons   []string
		status   string
		disabled bool
		want     string
	}{
		{"included in business", Business, nil, "active", false, ""},
		{"team with add-on", Team, []string{AddonIntegrations}, "active", false, ""},
		{"team without add-on", Team, nil, "active", false, ReasonAddonRequired},
		{"starter cannot add it", Starter, []string{AddonIntegrations}, "active", false, ReasonPlanRequired},
		{"paused account", Business, nil, "paused", false, ReasonAccountInactive},
		{"switched off by the service", Business, nil, "active", true, ReasonPlatformDisabled},
		{"switched off wins over paused", Team, nil, "paused", true, ReasonPlatformDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IntegrationsGate(tt.plan, tt.addons, tt.status, tt.disabled); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTranscriptionGate(t *testing.T) {
	tests := []struct {
		plan        string
		switchedOff bool
		want        string
	}{
		{Business, false, ""},
		{Team, false, ""},
		{Team, true, TranscriptionSwitchedOff},
		{Starter, false, TranscriptionNotInPlan},
		{Starter, true, TranscriptionNotInPlan}, // the plan is the reason to name
		{"enterprise-legacy", false, TranscriptionNotInPlan},
	}
	for _, tc := range tests {
		if got := TranscriptionGate(tc.plan, tc.switchedOff); got != tc.want {
			t.Errorf("TranscriptionGate(%q, %v) = %q, want %q", tc.plan, tc.switchedOff, got, tc.want)
		}
	}
}
