package engine

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// FirstAttempts admits deliveries' first attempts straight from the outbox (the engine's
// FirstAttempt makes them), without a
// WebhookDelivery resource: a delivery whose first attempt succeeds costs the API server
// nothing and PostgreSQL one batched history row. Only a delivery that needs the controller
// (its first attempt failed, or its endpoint is failing or has too many waiting) becomes a
// resource.
//
// Per-endpoint isolation: first attempts take the same per-endpoint Slots as the
// controller's attempts, so an endpoint never has more attempts in flight than its share,
// whoever makes them; at most MaxWaiting first attempts of one endpoint wait or run (past
// that its deliveries go to the controller, which parks them), and an endpoint that is
// failing gets no first attempts from here until an attempt to it succeeds.
type FirstAttempts struct {
	Clock clock.PassiveClock
	// MaxWaiting bounds one endpoint's first attempts waiting for a slot or in flight
	// (default 256); Total all of them (default 1024), which paces the outbox claims.
	MaxWaiting, Total int
	// MaxFailures is how many first attempts to an endpoint may fail in a row before its
	// deliveries go to the controller (default 8, one round of the default slots: a
	// hanging endpoint's first timeouts, and rare at 20 % of answers failing); Cooldown
	// how long they go there before one first attempt probes it again (default 1 s, on
	// Pacing). See endpointFailing.
	MaxFailures int
	Cooldown    time.Duration
	// ProbeInterval: how often a failing endpoint whose deliveries are deferred gets one
	// first attempt (ProbeWhileDeferred; default DefaultProbeInterval, on Pacing).
	ProbeInterval time.Duration
	// Stall is how long an endpoint may go without an attempt that succeeds and still count
	// as keeping up (default 500 ms): see Room. Pacing measures it (default the real clock,
	// whatever Clock is: like the dispatcher's poll interval it only paces the claims and
	// nothing recorded comes from it, so a fake Clock that tests step cannot hold them).
	Stall  time.Duration
	Pacing clock.PassiveClock
	// MaxDrain is how much queued work, at its pace, an endpoint may hold and still pace the
	// claims (default 1 s): see Room.
	MaxDrain time.Duration
	// Off admits no first attempt (rule FirstAttemptsOff): every delivery becomes a
	// resource the controller attempts. Set before the engine runs.
	Off bool

	mu    sync.Mutex
	load  map[types.NamespacedName]*endpointLoad
	total int
	// changed is signalled when an admitted first attempt ends or an endpoint makes
	// progress: room the dispatcher may be waiting for.
	changed chan struct{}
	// failures are the endpoints whose latest first attempts failed.
	failures map[types.NamespacedName]failureStreak
	// probed is when each failing endpoint was last probed (ProbeWhileDeferred), on Pacing;
	// an endpoint leaves it when a first attempt to it succeeds.
	probed map[types.NamespacedName]time.Time
}

// DefaultProbeInterval is how often a failing endpoint whose deliveries are deferred is
// probed: half the spec's first retry, so that a receiver that answers again gets its new
// events within a minute of answering.
const DefaultProbeInterval = 30 * time.Second

// failureStreak is an endpoint's first attempts that failed in a row, and the last one's
// time (from Clock, to compare with its status) and when it was noted (from Pacing).
type failureStreak struct {
	count int
	last  time.Time
	noted time.Time
}

// failingGrace is how long an endpoint's status must show it failing before the engine
// stops its first attempts on that alone (EndpointFailing), and before the backlog stops
// counting its pending deliveries: an endpoint that fails now and then has failingSince set
// for a moment after each failure.
const failingGrace = 10 * time.Second

// FirstOutcome is what became of a first attempt.
type FirstOutcome int

const (
	// Delivered: the endpoint answered 2xx; the history row is written.
	Delivered FirstOutcome = iota + 1
	// NeedsRetry: the attempt failed; the caller hands the delivery to the controller with
	// the attempt counted.
	NeedsRetry
	// NotAttempted: the endpoint began failing while this attempt waited for a slot; the
	// caller hands the delivery to the controller as it is.
	NotAttempted
	// EndpointRemoved: the endpoint was removed during the attempt; the delivery is recorded
	// cancelled.
	EndpointRemoved
	// Abandoned: the engine is stopping; nothing is recorded and the event is taken again.
	Abandoned
)

// FirstAttempt is one delivery's first attempt.
type FirstAttempt struct {
	Endpoint        *switchboardv1alpha1.WebhookEndpoint
	Secret          string
	AccountPublicID string
	DeliveryName    string
	EventID         uuid.UUID
	EventType       string
	Body            []byte
	// CreatedAt is when the delivery was made (the history's created_at).
	CreatedAt time.Time
	// EventCreatedAt is when the event was queued (for the event-to-success latency).
	EventCreatedAt time.Time
	// Probe: admitted by ProbeWhileDeferred, because the endpoint fails; not held back by
	// EndpointHealth once it has its slot.
	Probe bool
	// OutboxID is the event's outbox row. When Last (if set) says, once the attempt has
	// succeeded, that this delivery is the event's last, the history row marks the event
	// dispatched in the same statement (one commit for both).
	OutboxID uuid.UUID
	Last     func() bool
}

func (f *FirstAttempts) defaults() {
	if f.MaxWaiting <= 0 {
		f.MaxWaiting = DefaultFirstAttemptsPerEndpoint
	}
	if f.Total <= 0 {
		f.Total = DefaultFirstAttempts
	}
	if f.MaxFailures <= 0 {
		f.MaxFailures = 8
	}
	if f.Cooldown <= 0 {
		f.Cooldown = time.Second
	}
	if f.Stall <= 0 {
		f.Stall = 500 * time.Millisecond
	}
	if f.MaxDrain <= 0 {
		f.MaxDrain = time.Second
	}
	if f.Clock == nil {
		f.Clock = clock.RealClock{}
	}
	if f.Pacing == nil {
		f.Pacing = clock.RealClock{}
	}
	if f.ProbeInterval <= 0 {
		f.ProbeInterval = DefaultProbeInterval
	}
	if f.load == nil {
		f.load = map[types.NamespacedName]*endpointLoad{}
		f.failures = map[types.NamespacedName]failureStreak{}
		f.probed = map[types.NamespacedName]time.Time{}
		f.changed = make(chan struct{}, 1)
	}
}

// Changed is signalled when room for first attempts may have grown (see Free and Room).
func (f *FirstAttempts) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	return f.changed
}

// signalLocked notes a change for Changed; called with mu held.
func (f *FirstAttempts) signalLocked() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// endpointLoad is one endpoint's admitted first attempts, when it last made progress (an
// attempt succeeded, or, from idle, the first was admitted), and the times of its latest
// successes, from which its pace is measured.
type endpointLoad struct {
	admitted  int
	progress  time.Time
	successes [paceSamples]time.Time
	// next is where the next success goes in successes; seen how many it holds.
	next, seen int
}

// paceSamples is how many successes an endpoint's pace is measured over.
const paceSamples = 16

// noteSuccess records a success at now as progress and for the pace.
func (l *endpointLoad) noteSuccess(now time.Time) {
	l.progress = now
	l.successes[l.next] = now
	l.next = (l.next + 1) % paceSamples
	l.seen = min(l.seen+1, paceSamples)
}

// drainTime is how long the endpoint takes to finish its admitted first attempts at the pace
// of its latest successes; ok is false until it has succeeded twice.
func (l endpointLoad) drainTime() (d time.Duration, ok bool) {
	if l.seen < 2 {
		return 0, false
	}
	newest := l.successes[(l.next+paceSamples-1)%paceSamples]
	oldest := l.successes[(l.next+paceSamples-l.seen)%paceSamples]
	span := newest.Sub(oldest)
	if span <= 0 {
		return 0, true // as fast as the clock can tell
	}
	return time.Duration(float64(span) / float64(l.seen-1) * float64(l.admitted)), true
}

// Hanging counts, by namespace (one per account), the first attempts admitted to endpoints
// that have had none succeed for Stall: hanging or down, whatever their status shows yet.
func (f *FirstAttempts) Hanging() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	now := f.Pacing.Now()
	out := map[string]int{}
	for key, l := range f.load {
		if l.admitted > 0 && now.Sub(l.progress) >= f.Stall {
			out[key.Namespace] += l.admitted
		}
	}
	return out
}

// maxWaiting is MaxWaiting, or its default.
func (f *FirstAttempts) maxWaiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	return f.MaxWaiting
}

// Stalled reports whether ep lags (see Room): it hangs or is down, though its status may not
// show it failing yet (that waits for the first attempt's timeout), or it is too slow for
// what it was sent. The dispatcher's back-pressure leaves its backlog out.
func (f *FirstAttempts) Stalled(ep types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	l := f.load[ep]
	return l != nil && endpointLagging(*l, f.Pacing.Now(), f.Stall, f.MaxDrain)
}

// endpointLagging is the rule of Stalled and Room: first attempts admitted, and no progress
// for stall or more than maxDrain of work queued at the endpoint's pace.
func endpointLagging(l endpointLoad, now time.Time, stall, maxDrain time.Duration) bool {
	if l.admitted == 0 {
		return false
	}
	if now.Sub(l.progress) >= stall {
		return true
	}
	d, ok := l.drainTime()
	return ok && d > maxDrain
}

// Free is how many more first attempts may be admitted now.
func (f *FirstAttempts) Free() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	return f.Total - f.total
}

// Admit decides the route of a delivery to ep by FirstAdmission and, for a first attempt,
// lets it wait for a slot; done, which must be called once the attempt is over, is safe to
// call twice. repeat is whether the event was claimed before; noRoom whether a resource for
// the delivery would be deferred now. rule names the rule that decided (RuleAdmitted for a
// first attempt, ProbeWhileDeferred for a probe).
func (f *FirstAttempts) Admit(ep *switchboardv1alpha1.WebhookEndpoint, repeat, noRoom bool) (done func(), route Route, rule string) {
	key := client.ObjectKeyFromObject(ep)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	l := f.load[key]
	facts := f.factsLocked(key, ep, l)
	facts.Repeat, facts.NoRoom = repeat, noRoom
	if route, rule = FirstAdmission.Decide(facts, f.limits()); route != RouteFirstAttempt {
		return nil, route, rule
	}
	if rule == ProbeWhileDeferred.Name {
		f.probed[key] = f.Pacing.Now()
	}
	if l == nil {
		l = &endpointLoad{progress: f.Pacing.Now()}
		f.load[key] = l
	}
	l.admitted++
	f.total++
	return sync.OnceFunc(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.total--
		if l.admitted--; l.admitted == 0 {
			delete(f.load, key)
		}
		f.signalLocked()
	}), route, rule
}

// limits are the bounds FirstAdmission applies.
func (f *FirstAttempts) limits() AdmissionLimits {
	return AdmissionLimits{FailingGrace: failingGrace, MaxFailures: f.MaxFailures, Cooldown: f.Cooldown, MaxWaiting: f.MaxWaiting, Total: f.Total,
		ProbeInterval: f.ProbeInterval, Off: f.Off}
}

// failing reports whether an admitted first attempt to ep, now that it has its slot, is held
// back by EndpointHealth; rule names the rule.
func (f *FirstAttempts) failing(key types.NamespacedName, ep *switchboardv1alpha1.WebhookEndpoint) (held bool, rule string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	facts := f.factsLocked(key, ep, nil) // the attempt itself does not count as another
	route, rule := EndpointHealth.Decide(facts, f.limits())
	return route != RouteFirstAttempt, rule
}

// factsLocked gathers what the rules look at for ep, with l its admitted first attempts. A
// failure streak ends when a first attempt succeeds, or when ep's status shows a later
// success (the controller's retry).
func (f *FirstAttempts) factsLocked(key types.NamespacedName, ep *switchboardv1alpha1.WebhookEndpoint, l *endpointLoad) AdmissionFacts {
	streak := f.failures[key]
	if last := ep.Status.LastDeliveryAt; streak.count > 0 && ep.Status.FailingSince == nil && last != nil && last.After(streak.last) {
		delete(f.failures, key)
		streak = failureStreak{}
	}
	facts := AdmissionFacts{Deliverable: send.Deliverable(ep), Streak: streak.count, Total: f.total}
	if streak.count > 0 {
		facts.SinceStreak = f.Pacing.Now().Sub(streak.noted)
	}
	if fs := ep.Status.FailingSince; fs != nil {
		facts.Failing, facts.FailingFor = true, f.Clock.Now().Sub(fs.Time)
	}
	if l != nil {
		facts.Admitted = l.admitted
	}
	if at, ok := f.probed[key]; ok {
		facts.Probed, facts.SinceProbe = true, f.Pacing.Now().Sub(at)
	}
	return facts
}

// noteOutcome counts a first attempt's result; a success is also the endpoint's progress
// (see Room).
func (f *FirstAttempts) noteOutcome(key types.NamespacedName, ok bool, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaults()
	if !ok {
		streak := f.failures[key]
		f.failures[key] = failureStreak{count: streak.count + 1, last: at, noted: f.Pacing.Now()}
		return
	}
	delete(f.failures, key)
	delete(f.probed, key)
	if l := f.load[key]; l != nil {
		l.noteSuccess(f.Pacing.Now())
		f.signalLocked()
	}
}

// FirstAttempt waits for one of the endpoint's slots, then makes an admitted first attempt
// (Attempt) and records what it can: the history row of a success or of a cancellation by
// the endpoint's removal. It returns the attempt's result and time (for the caller's retry
// status); err is a failed history write.
func (e *Engine) FirstAttempt(ctx context.Context, a FirstAttempt) (send.Result, time.Time, FirstOutcome, error) {
	epKey := client.ObjectKeyFromObject(a.Endpoint)
	release, err := e.Slots.AcquireWait(ctx, epKey)
	if err != nil {
		return send.Result{}, time.Time{}, Abandoned, nil
	}
	// Admitted already: past a streak's cooldown it goes ahead (at most the slots at once).
	if held, _ := e.First.failing(epKey, a.Endpoint); held && !a.Probe {
		release()
		return send.Result{}, time.Time{}, NotAttempted, nil
	}
	// An endpoint with a rate limit: the attempt waits for its turn, holding its slot.
	if err := e.Throttle.Wait(ctx, a.Endpoint); err != nil {
		release()
		return send.Result{}, time.Time{}, Abandoned, nil
	}
	// From here the attempt outlives a stop by StopGrace: its answer is recorded, and its
	// event is not claimed and sent again by another replica.
	ctx, cancel := outliving(ctx, e.StopGrace, e.stopTimer())
	defer cancel()
	out := e.Attempt(ctx, release, AttemptRequest{Endpoint: a.Endpoint, Secret: a.Secret, DeliveryName: a.DeliveryName,
		EventID: a.EventID.String(), EventType: a.EventType, Body: a.Body})
	if out.Stopped {
		return out.Result, out.SentAt, Abandoned, nil
	}
	row := store.FinishedDelivery{AccountPublicID: a.AccountPublicID, EndpointPublicID: a.Endpoint.Name, DeliveryName: a.DeliveryName,
		EventID: a.EventID, EventType: a.EventType, CreatedAt: a.CreatedAt}
	if out.EndpointRemoved {
		// Like the controller's: the attempt is not counted.
		return out.Result, out.SentAt, EndpointRemoved, e.Finish(ctx, row, switchboardv1alpha1.WebhookDeliveryPhaseCancelled)
	}
	e.First.noteOutcome(epKey, out.Result.OK, out.SentAt)
	if !out.Result.OK {
		// The delivery becomes retrying: its first attempt is kept beside the retries. Not
		// being able to keep it must not send the event again, so it is only logged.
		next, _ := send.NextAttempt(1, out.SentAt)
		if err := e.RecordAttempt(ctx, AttemptRecord{AccountPublicID: a.AccountPublicID, EndpointPublicID: a.Endpoint.Name,
			DeliveryName: a.DeliveryName, EventID: a.EventID, Attempt: 1, Out: out, NextAttemptAt: &next}); err != nil && ctx.Err() == nil {
			e.Log.Error(err, "keep a failed first attempt", "delivery", a.DeliveryName)
		}
		return out.Result, out.SentAt, NeedsRetry, nil
	}
	// The delivery's final outcome is known here for a first attempt that succeeds.
	row.Attempts, row.ResponseCode = 1, out.Result.StatusCode
	if a.Last != nil && a.Last() {
		row.DispatchesEvent, row.DispatchesEventCreatedAt = a.OutboxID, a.EventCreatedAt
	}
	metrics.WebhookEventSucceeded(e.Clock.Since(a.EventCreatedAt))
	return out.Result, out.SentAt, Delivered, e.Finish(ctx, row, switchboardv1alpha1.WebhookDeliveryPhaseSucceeded)
}
