package engine

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Engine is the delivery engine: the per-endpoint slots, the attempts in flight, the
// endpoints' health, the admission of first attempts and the backlog of live deliveries, with
// the one way an attempt is made (Attempt) and the one writer of finished deliveries
// (Finish). It is built once per process (internal/app, on the always-on manager) and shared
// by the Dispatcher, which makes first attempts, and each leader term's WebhookDelivery
// reconciler, which makes the others, so an endpoint's bounds and status hold whoever attempts.
type Engine struct {
	Sender *send.Sender
	Store  *store.Store
	Clock  clock.PassiveClock

	Slots    *Slots
	InFlight *InFlight
	Removed  *Removed
	Health   *HealthWriter
	// First admits first attempts (First.Off: none, every delivery is a resource).
	First *FirstAttempts
	// Backlog follows the live deliveries for the dispatcher's pacing; nil: no pacing.
	Backlog *Backlog
	// Throttle holds attempts to endpoints with a rate limit to it.
	Throttle *Throttle
	// StopGrace is how long first attempts already sent go on once the dispatcher's context
	// ends (outliving); StopTimer measures it.
	StopGrace time.Duration
	StopTimer clock.Clock
}

// EngineOptions configure NewEngine; zero values take the defaults.
type EngineOptions struct {
	Sender *send.Sender
	Store  *store.Store
	Clock  clock.PassiveClock
	// PerEndpoint bounds the attempts in flight to one endpoint (default 8).
	PerEndpoint int
	// FirstAttemptsPerEndpoint and FirstAttempts bound the first attempts waiting for a slot
	// or in flight, of one endpoint and in all (FirstAttempts.MaxWaiting and Total).
	FirstAttemptsPerEndpoint, FirstAttempts int
	// HealthWriteGap and WriteTimer space the writes of an endpoint's health (see
	// HealthWriter).
	HealthWriteGap time.Duration
	WriteTimer     clock.Clock
	// StopGrace: how long first attempts already sent go on once the process is stopping
	// (default DefaultStopGrace; negative: none, they are cut short and their events claimed
	// again).
	StopGrace time.Duration
	Log       logr.Logger
}

// Defaults of EngineOptions.
const (
	DefaultPerEndpoint = 8
	// DefaultFirstAttemptsPerEndpoint: enough to keep an endpoint's 8 slots busy through a
	// burst (claims come in batches) while a hanging endpoint holds at most this many
	// goroutines and bodies before its deliveries go to the controller.
	DefaultFirstAttemptsPerEndpoint = 256
	// DefaultFirstAttempts: the engine's memory for first attempts (bodies up to 7.9 KB:
	// about 8 MB) and what one claim pass may admit.
	DefaultFirstAttempts = 1024
)

// NewEngine builds the engine on mgr: its health writer writes through mgr's client and its
// backlog follows mgr's cache.
func NewEngine(ctx context.Context, mgr ctrl.Manager, o EngineOptions) (*Engine, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = DefaultPerEndpoint
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	e := &Engine{Sender: o.Sender, Store: o.Store, Clock: o.Clock, InFlight: NewInFlight(), Removed: NewRemoved(DefaultRemovedKept),
		StopGrace: o.StopGrace, StopTimer: clock.RealClock{},
		Health:  NewHealthWriter(mgr.GetClient(), o.HealthWriteGap, o.WriteTimer, o.Log.WithName("webhook-endpoint-health")),
		Backlog: NewBacklog(o.Clock)}
	// Until a reconciler takes the parked deliveries (ListenParked), a released slot wakes none.
	e.Slots = NewSlots(o.PerEndpoint, func(types.NamespacedName) bool { return false })
	e.First = &FirstAttempts{Clock: o.Clock, MaxWaiting: o.FirstAttemptsPerEndpoint, Total: o.FirstAttempts}
	e.Throttle = NewThrottle(clock.RealClock{})
	if err := e.Backlog.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	return e, nil
}

// parkedBuffer bounds the parked deliveries woken but not yet taken by the reconciler.
const parkedBuffer = 4096

// ListenParked returns the channel on which released slots wake the deliveries parked waiting for
// them, for the WebhookDelivery reconciler's watch. Each call hands the slots a new channel
// and the previous one gets no more: the engine outlives the leader's terms, and each
// term's reconciler takes its own.
func (e *Engine) ListenParked() <-chan event.GenericEvent {
	parked := make(chan event.GenericEvent, parkedBuffer)
	e.Slots.SetWake(func(d types.NamespacedName) bool {
		select {
		case parked <- event.GenericEvent{Object: &switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name}}}:
			return true
		default: // full: the delivery comes back after its requeue
			return false
		}
	})
	return parked
}

// AttemptRequest is one attempt of a delivery to an endpoint.
type AttemptRequest struct {
	Endpoint     *switchboardv1alpha1.WebhookEndpoint
	Secret       string
	DeliveryName string
	EventID      string
	EventType    string
	Body         []byte
}

// Attempted is what became of an attempt.
type Attempted struct {
	Result send.Result
	SentAt time.Time
	// EndpointRemoved: the endpoint was removed during the attempt (which is not counted).
	EndpointRemoved bool
	// Stopped: ctx ended (the manager is stopping); nothing is recorded.
	Stopped bool
}

// Attempt sends a, signed at send time, in the endpoint's slot that release gives back: it
// tracks the attempt in flight (removing the endpoint cancels it), gives the slot back as
// soon as the answer is in (not after the writes that follow), and records the outcome in
// the endpoint's health unless the endpoint was removed or ctx ended.
func (e *Engine) Attempt(ctx context.Context, release func(), a AttemptRequest) Attempted {
	defer release()
	epKey := client.ObjectKeyFromObject(a.Endpoint)
	attemptCtx, cancel := context.WithCancel(ctx)
	untrack := e.InFlight.Track(epKey, a.DeliveryName, cancel)
	sentAt := e.Clock.Now()
	res := e.Sender.Send(attemptCtx, send.Request{URL: a.Endpoint.Spec.URL, Secret: a.Secret, EventType: a.EventType,
		EventID: a.EventID, Body: a.Body, SentAt: sentAt})
	removed := attemptCtx.Err() != nil && ctx.Err() == nil
	untrack()
	cancel()
	release()
	out := Attempted{Result: res, SentAt: sentAt, EndpointRemoved: removed, Stopped: ctx.Err() != nil}
	if !out.EndpointRemoved && !out.Stopped {
		e.Health.Record(a.Endpoint, res.OK, res.StatusCode, sentAt)
	}
	return out
}

// Finish writes a finished delivery to the history (the one writer of it) and counts it:
// phase is its final phase (Succeeded, Failed or Cancelled). FinishedAt is now.
func (e *Engine) Finish(ctx context.Context, row store.FinishedDelivery, phase switchboardv1alpha1.WebhookDeliveryPhase) error {
	row.Status = send.APIStatus(phase)
	row.FinishedAt = e.Clock.Now()
	if err := e.Store.RecordFinishedDelivery(ctx, row); err != nil {
		return err
	}
	metrics.WebhookDeliveryFinished(phase)
	return nil
}
