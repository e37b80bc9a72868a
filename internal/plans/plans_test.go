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
