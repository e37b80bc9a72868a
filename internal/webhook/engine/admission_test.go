package engine

import (
	"testing"
	"time"
)

func TestFirstAdmission(t *testing.T) {
	limits := AdmissionLimits{FailingGrace: 10 * time.Second, MaxFailures: 8, Cooldown: time.Second, MaxWaiting: 256, Total: 1024,
		ProbeInterval: 30 * time.Second}
	healthy := AdmissionFacts{Deliverable: true}
	with := func(change func(*AdmissionFacts)) AdmissionFacts {
		f := healthy
		change(&f)
		return f
	}
	for _, tc := range []struct {
		name  string
		facts AdmissionFacts
		route Route
		rule  string
	}{
		{"healthy", healthy, RouteFirstAttempt, RuleAdmitted},
		{"paused or switched off", with(func(f *AdmissionFacts) { f.Deliverable = false }), RouteCancelled, "EndpointNotActive"},
		{"paused wins over everything", AdmissionFacts{Repeat: true, Failing: true, FailingFor: time.Hour, Total: 5000}, RouteCancelled, "EndpointNotActive"},
		{"a repeated claim", with(func(f *AdmissionFacts) { f.Repeat = true }), RouteController, "RepeatedEvent"},
		{"status failing for a moment (mixed answers)", with(func(f *AdmissionFacts) { f.Failing, f.FailingFor = true, time.Second }), RouteFirstAttempt, RuleAdmitted},
		{"status failing for the grace (down)", with(func(f *AdmissionFacts) { f.Failing, f.FailingFor = true, 10*time.Second }), RouteController, "EndpointFailing"},
		{"seven first attempts failed in a row", with(func(f *AdmissionFacts) { f.Streak = 7 }), RouteFirstAttempt, RuleAdmitted},
		{"eight in a row (went down, or hangs)", with(func(f *AdmissionFacts) { f.Streak = 8 }), RouteController, "FailureStreak"},
		{"eight in a row, within the cooldown", with(func(f *AdmissionFacts) { f.Streak, f.SinceStreak = 8, 999*time.Millisecond }), RouteController, "FailureStreak"},
		{"past the cooldown: one probe", with(func(f *AdmissionFacts) { f.Streak, f.SinceStreak = 8, time.Second }), RouteFirstAttempt, RuleAdmitted},
		{"past the cooldown, a probe under way", with(func(f *AdmissionFacts) { f.Streak, f.SinceStreak, f.Admitted = 9, time.Second, 1 }), RouteController, "FailureStreak"},
		{"the status decides whatever the cooldown", with(func(f *AdmissionFacts) {
			f.Failing, f.FailingFor, f.Streak, f.SinceStreak = true, time.Minute, 8, time.Minute
		}), RouteController, "EndpointFailing"},
		{"failing, no room, never probed: a probe", with(func(f *AdmissionFacts) { f.Failing, f.FailingFor, f.NoRoom = true, time.Hour, true }),
			RouteFirstAttempt, "ProbeWhileDeferred"},
		{"a streak, no room: a probe", with(func(f *AdmissionFacts) { f.Streak, f.NoRoom = 8, true }), RouteFirstAttempt, "ProbeWhileDeferred"},
		{"failing, room left: the controller attempts it", with(func(f *AdmissionFacts) { f.Failing, f.FailingFor = true, time.Hour }),
			RouteController, "EndpointFailing"},
		{"failing, no room, probed 29 s ago", with(func(f *AdmissionFacts) {
			f.Failing, f.FailingFor, f.NoRoom, f.Probed, f.SinceProbe = true, time.Hour, true, true, 29*time.Second
		}), RouteController, "EndpointFailing"},
		{"failing, no room, probed 30 s ago", with(func(f *AdmissionFacts) {
			f.Failing, f.FailingFor, f.NoRoom, f.Probed, f.SinceProbe = true, time.Hour, true, true, 30*time.Second
		}), RouteFirstAttempt, "ProbeWhileDeferred"},
		{"failing, no room, a probe under way", with(func(f *AdmissionFacts) {
			f.Failing, f.FailingFor, f.NoRoom, f.Admitted = true, time.Hour, true, 1
		}), RouteController, "EndpointFailing"},
		{"failing, no room, the engine full", with(func(f *AdmissionFacts) { f.Failing, f.FailingFor, f.NoRoom, f.Total = true, time.Hour, true, 1024 }),
			RouteController, "EndpointFailing"},
		{"failing for a moment only, no room: a plain first attempt", with(func(f *AdmissionFacts) {
			f.Failing, f.FailingFor, f.NoRoom = true, time.Second, true
		}), RouteFirstAttempt, RuleAdmitted},
		{"paused, no room: cancelled", with(func(f *AdmissionFacts) {
			f.Deliverable, f.Failing, f.FailingFor, f.NoRoom = false, true, time.Hour, true
		}),
			RouteCancelled, "EndpointNotActive"},
		{"one below the endpoint's bound", with(func(f *AdmissionFacts) { f.Admitted = 255 }), RouteFirstAttempt, RuleAdmitted},
		{"the endpoint's bound", with(func(f *AdmissionFacts) { f.Admitted = 256 }), RouteController, "EndpointQueueFull"},
		{"the engine's bound", with(func(f *AdmissionFacts) { f.Total = 1024 }), RouteController, "EngineFull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, rule := FirstAdmission.Decide(tc.facts, limits)
			if route != tc.route || rule != tc.rule {
				t.Errorf("Decide = %s by %s, want %s by %s", route, rule, tc.route, tc.rule)
			}
		})
	}
}

// An engine without first attempts sends every active endpoint's delivery to the controller
// and still cancels those of inactive endpoints.
func TestFirstAdmissionWithFirstAttemptsOff(t *testing.T) {
	off := AdmissionLimits{FailingGrace: 10 * time.Second, MaxFailures: 8, Cooldown: time.Second, MaxWaiting: 256, Total: 1024, Off: true}
	if route, rule := FirstAdmission.Decide(AdmissionFacts{Deliverable: true}, off); route != RouteController || rule != "FirstAttemptsOff" {
		t.Errorf("healthy endpoint: %s by %s, want controller by FirstAttemptsOff", route, rule)
	}
	if route, rule := FirstAdmission.Decide(AdmissionFacts{}, off); route != RouteCancelled || rule != "EndpointNotActive" {
		t.Errorf("paused endpoint: %s by %s, want cancelled by EndpointNotActive", route, rule)
	}
}

// An attempt that got its slot is held back only by the endpoint's health, never by the
// bounds it already counts in.
func TestEndpointHealthChecksOnlyHealth(t *testing.T) {
	limits := AdmissionLimits{FailingGrace: 10 * time.Second, MaxFailures: 8, Cooldown: time.Second, MaxWaiting: 1, Total: 1}
	if route, rule := EndpointHealth.Decide(AdmissionFacts{Deliverable: true, Admitted: 1, Total: 1}, limits); route != RouteFirstAttempt {
		t.Errorf("held back by %s at its own bounds", rule)
	}
	if route, rule := EndpointHealth.Decide(AdmissionFacts{Deliverable: true, Failing: true, FailingFor: time.Minute}, limits); route != RouteController || rule != "EndpointFailing" {
		t.Errorf("a failing endpoint: %s by %s", route, rule)
	}
}
