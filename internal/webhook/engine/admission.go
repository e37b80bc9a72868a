package engine

import "time"

// Route is how the dispatcher makes one delivery of a claimed event.
type Route string

const (
	// RouteFirstAttempt: the engine attempts it now, without a WebhookDelivery resource.
	RouteFirstAttempt Route = "first_attempt"
	// RouteController: it becomes a WebhookDelivery resource, which the controller attempts,
	// parks until a slot frees or retries on the schedule.
	RouteController Route = "controller"
	// RouteCancelled: it is not attempted; it is listed as cancelled and can be resent.
	RouteCancelled Route = "cancelled"
)

// AdmissionFacts are what the admission rules decide on, for one delivery to one endpoint.
type AdmissionFacts struct {
	// Deliverable: the endpoint is not paused, switched off or being removed.
	Deliverable bool
	// Repeat: the event was claimed before (a claim that outlived its replica): the
	// controller checks the history before it attempts again.
	Repeat bool
	// FailingFor is how long the endpoint's status has shown it failing (failingSince);
	// Failing is false when it does not.
	Failing    bool
	FailingFor time.Duration
	// Streak is how many first attempts to the endpoint failed in a row, and SinceStreak the
	// time since the last of them (on the pacing clock).
	Streak      int
	SinceStreak time.Duration
	// Admitted is the endpoint's first attempts waiting for a slot or in flight; Total all
	// endpoints'.
	Admitted, Total int
	// NoRoom: a delivery to the endpoint that needs a resource would be deferred now (the
	// live deliveries are at a cap), so the controller would not attempt it until room frees.
	NoRoom bool
	// SinceProbe is the time since the last probe of the endpoint (ProbeWhileDeferred) began;
	// Probed is false when there has been none.
	Probed     bool
	SinceProbe time.Duration
}

// AdmissionLimits are the bounds the rules apply.
type AdmissionLimits struct {
	// FailingGrace: how long a status showing the endpoint failing is tolerated.
	FailingGrace time.Duration
	// MaxFailures first attempts failed in a row send the endpoint's deliveries to the
	// controller for Cooldown, then one first attempt at a time probes it.
	MaxFailures int
	Cooldown    time.Duration
	// MaxWaiting bounds one endpoint's admitted first attempts, Total all of them.
	MaxWaiting, Total int
	// ProbeInterval is how often a failing endpoint whose deliveries are being deferred is
	// probed with one of them (ProbeWhileDeferred).
	ProbeInterval time.Duration
	// Off: the engine makes no first attempts; every delivery becomes a resource.
	Off bool
}

// AdmissionRule holds a delivery back from a first attempt when Holds says so, and sends it
// the rule's Route. Name is the rule in metrics (switchboard_webhook_deliveries_routed_total)
// and logs.
type AdmissionRule struct {
	Name  string
	Route Route
	Holds func(AdmissionFacts, AdmissionLimits) bool
}

// AdmissionChain is a list of rules applied in order; the first that holds decides.
type AdmissionChain []AdmissionRule

// RuleAdmitted names the decision when no rule held the delivery back.
const RuleAdmitted = "Admitted"

// Decide is the route of a delivery and the rule that chose it (RuleAdmitted for a first
// attempt).
func (c AdmissionChain) Decide(f AdmissionFacts, l AdmissionLimits) (Route, string) {
	for _, r := range c {
		if r.Holds(f, l) {
			return r.Route, r.Name
		}
	}
	return RouteFirstAttempt, RuleAdmitted
}

// The admission rules, in the order FirstAdmission applies them.
var (
	// EndpointNotActive: a paused or switched-off endpoint gets no attempt; the event is
	// listed as cancelled and can be resent once it is active.
	EndpointNotActive = AdmissionRule{Name: "EndpointNotActive", Route: RouteCancelled,
		Holds: func(f AdmissionFacts, _ AdmissionLimits) bool { return !f.Deliverable }}
	// FirstAttemptsOff: the engine was built without first attempts (FirstAttempts.Off), so
	// the controller makes every attempt.
	FirstAttemptsOff = AdmissionRule{Name: "FirstAttemptsOff", Route: RouteController,
		Holds: func(_ AdmissionFacts, l AdmissionLimits) bool { return l.Off }}
	// RepeatedEvent: an event claimed before may have been delivered already; the controller
	// looks at the history first.
	RepeatedEvent = AdmissionRule{Name: "RepeatedEvent", Route: RouteController,
		Holds: func(f AdmissionFacts, _ AdmissionLimits) bool { return f.Repeat }}
	// ProbeWhileDeferred: the endpoint is failing and its deliveries are being deferred for
	// want of room, so no attempt would reach it until a live delivery's next retry (up to
	// hours away) finishes; one delivery at a time, every ProbeInterval, is attempted first,
	// so that an endpoint that answers again is seen to, and takes first attempts again, when
	// its next event arrives. A probe that fails is deferred like the rest.
	ProbeWhileDeferred = AdmissionRule{Name: "ProbeWhileDeferred", Route: RouteFirstAttempt,
		Holds: func(f AdmissionFacts, l AdmissionLimits) bool {
			failing := (f.Failing && f.FailingFor >= l.FailingGrace) || f.Streak >= l.MaxFailures
			return failing && f.NoRoom && f.Admitted == 0 && f.Total < l.Total && (!f.Probed || f.SinceProbe >= l.ProbeInterval)
		}}
	// EndpointFailing: the status has shown the endpoint failing for the grace period (it is
	// down; the status outlives a restart). failingSince is the start of the first failed
	// attempt, so an endpoint that hangs past the attempt timeout is past the grace at once.
	EndpointFailing = AdmissionRule{Name: "EndpointFailing", Route: RouteController,
		Holds: func(f AdmissionFacts, l AdmissionLimits) bool { return f.Failing && f.FailingFor >= l.FailingGrace }}
	// FailureStreak: the endpoint's last MaxFailures first attempts failed (it went down, or
	// hangs, just now): for Cooldown after the last of them, and past it while another first
	// attempt to it is under way, so that one at a time probes it. An endpoint whose answers
	// are mixed keeps its first attempts.
	FailureStreak = AdmissionRule{Name: "FailureStreak", Route: RouteController,
		Holds: func(f AdmissionFacts, l AdmissionLimits) bool {
			return f.Streak >= l.MaxFailures && (f.SinceStreak < l.Cooldown || f.Admitted > 0)
		}}
	// EndpointQueueFull: MaxWaiting first attempts of the endpoint wait or run already; the
	// controller parks the rest, so a hanging endpoint holds no more of the engine.
	EndpointQueueFull = AdmissionRule{Name: "EndpointQueueFull", Route: RouteController,
		Holds: func(f AdmissionFacts, l AdmissionLimits) bool { return f.Admitted >= l.MaxWaiting }}
	// EngineFull: Total first attempts wait or run already.
	EngineFull = AdmissionRule{Name: "EngineFull", Route: RouteController,
		Holds: func(f AdmissionFacts, l AdmissionLimits) bool { return f.Total >= l.Total }}
)

// FirstAdmission decides each claimed delivery's route.
var FirstAdmission = AdmissionChain{EndpointNotActive, FirstAttemptsOff, RepeatedEvent, ProbeWhileDeferred, EndpointFailing, FailureStreak,
	EndpointQueueFull, EngineFull}

// EndpointHealth is the part of FirstAdmission that an admitted first attempt checks again
// when it gets its slot: the endpoint may have begun failing while it waited. A probe
// (ProbeWhileDeferred) is not checked again: it was admitted because the endpoint fails.
var EndpointHealth = AdmissionChain{EndpointFailing, FailureStreak}
