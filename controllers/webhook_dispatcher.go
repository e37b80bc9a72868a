/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/delivery"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// WebhookDispatcher fans undispatched outbox events out to deliveries: one per endpoint of
// the event's account that subscribes to its type. It runs on the leader only. With First
// set it is the delivery engine: first attempts are made from here, and a WebhookDelivery is
// created only for a delivery that needs the controller.
//
// A pass claims a batch of events with a lease (one committed statement), makes their
// deliveries with no transaction open, and marks each event dispatched once all its
// deliveries are recorded (a resource, a history row). Delivery names are a hash of event id
// and endpoint, so when the dispatcher stops before marking, the claim's lease ends and the
// next pass makes the same names again, through the controller (AlreadyExists; a delivery
// already finished is in the history and is not sent again) — at least once, never twice per
// endpoint, and a repeat carries the same event id. Events for an endpoint that is paused or
// switched off are recorded as cancelled deliveries (resendable) without a resource.
type WebhookDispatcher struct {
	// Client creates deliveries; Reader lists endpoints past the cache (an endpoint created
	// a moment ago must receive the next event).
	Client client.Client
	Reader client.Reader
	Store  *store.Store
	Clock  clock.PassiveClock
	// Interval is how often the outbox is polled when it was empty (default 500 ms; 20 ms
	// with First).
	Interval time.Duration
	// BatchSize is how many events one claim takes (default 200).
	BatchSize int
	// Lease is how long a claim holds its events (default 1 minute): past it, events a
	// stopped dispatcher claimed are claimed again.
	Lease time.Duration
	// Parallel is how many deliveries are created at once (default 32).
	Parallel int
	// Backlog, when set, paces the dispatcher: it takes events only while the deliveries
	// whose first attempt is still to be made stay within MaxPending (default 2000), and all
	// live deliveries within MaxLive (0: no bound). Events wait in the outbox meanwhile.
	Backlog    *DeliveryBacklog
	MaxPending int
	MaxLive    int
	// MaxLivePerEndpoint bounds one endpoint's live deliveries (default 10,000; negative:
	// no bound). Past it, an event for that endpoint is recorded as a cancelled delivery,
	// resendable, instead of a resource: an endpoint that hangs or fails for hours would
	// otherwise pile up a delivery per event in etcd until it is switched off.
	MaxLivePerEndpoint int
	// First, when set, makes first attempts straight from the outbox (the engine, see
	// delivery.FirstAttempts): only deliveries that need the controller become resources.
	// Without it every delivery is a resource.
	First *delivery.FirstAttempts
	Log   logr.Logger

	// jobs are the first attempts running; Start waits for them before it returns.
	jobs sync.WaitGroup
}

// DefaultMaxPendingDeliveries bounds the deliveries waiting for a first attempt.
const DefaultMaxPendingDeliveries = 2000

// DefaultEventLease is how long a dispatcher's claim on outbox events lasts.
const DefaultEventLease = time.Minute

// DefaultMaxLiveDeliveriesPerEndpoint bounds one endpoint's live deliveries.
const DefaultMaxLiveDeliveriesPerEndpoint = 10000

// NeedLeaderElection: one dispatcher at a time (FOR UPDATE SKIP LOCKED keeps two safe too).
func (w *WebhookDispatcher) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (w *WebhookDispatcher) Start(ctx context.Context) error {
	w.defaults()
	// First attempts cut short by ctx release their events' claims before Start returns, so
	// the next leader takes them at once.
	defer w.jobs.Wait()
	// The poll interval only paces the loop (real time); every recorded time comes from Clock.
	ticker := time.NewTicker(w.Interval)
	defer ticker.Stop()
	var changed <-chan struct{}
	if w.Backlog != nil {
		changed = w.Backlog.Changed()
	}
	for {
		limit := w.limit()
		if limit > 0 {
			n, err := w.dispatch(ctx, limit)
			if err != nil && ctx.Err() == nil {
				w.Log.Error(err, "dispatch webhook events")
			}
			if n == limit && err == nil {
				continue
			}
		}
		// The outbox was empty, or the backlog full: wait for the next poll, or for room.
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-changed:
			if limit > 0 {
				// Room was not what was missing: wait for the poll.
				select {
				case <-ctx.Done():
					return nil
				case <-ticker.C:
				}
			}
		}
	}
}

func (w *WebhookDispatcher) defaults() {
	if w.Interval <= 0 {
		w.Interval = 500 * time.Millisecond
		if w.First != nil {
			// The engine delivers as soon as it claims: poll often (an indexed probe).
			w.Interval = 20 * time.Millisecond
		}
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 200
	}
	if w.Lease <= 0 {
		w.Lease = DefaultEventLease
	}
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	if w.Backlog != nil && w.MaxPending == 0 {
		w.MaxPending = DefaultMaxPendingDeliveries
	}
	if w.MaxLivePerEndpoint == 0 {
		w.MaxLivePerEndpoint = DefaultMaxLiveDeliveriesPerEndpoint
	}
}

// limit is how many events the backlog leaves room for now (BatchSize without a Backlog).
func (w *WebhookDispatcher) limit() int {
	limit := w.BatchSize
	if w.Backlog != nil {
		pending, live := w.Backlog.Load()
		limit = eventsToDispatch(w.MaxPending, pending, live, w.MaxLive, w.BatchSize, switchboardv1alpha1.MaxWebhookEndpointsPerAccount)
	}
	if w.First != nil {
		// Back-pressure on the engine: at most five first attempts an event, and no more
		// events than a busy endpoint that keeps up can take as first attempts.
		limit = min(limit, w.First.Free()/switchboardv1alpha1.MaxWebhookEndpointsPerAccount, w.First.Room())
	}
	return limit
}

// DispatchOnce handles one batch, as large as the backlog leaves room for, and returns how
// many events it marked dispatched.
func (w *WebhookDispatcher) DispatchOnce(ctx context.Context) (int, error) {
	w.defaults()
	limit := w.limit()
	if limit == 0 {
		return 0, nil
	}
	return w.dispatch(ctx, limit)
}

// dispatch claims up to limit events, fans them out, and marks those fanned out dispatched;
// the claim on the others is released so the next pass retries them. An event with first
// attempts still running is marked (or released) by the last of them.
func (w *WebhookDispatcher) dispatch(ctx context.Context, limit int) (int, error) {
	evs, err := w.Store.ClaimEvents(ctx, limit, w.Clock.Now(), w.Lease)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	done, failed, running, ferr := w.fanOut(ctx, evs)
	if err := w.Store.MarkEventsDispatched(ctx, done, w.Clock.Now()); err != nil {
		return 0, err
	}
	if err := w.Store.ReleaseEvents(ctx, failed); err != nil && ferr == nil {
		ferr = err
	}
	return len(done) + running, ferr
}

// eventProgress counts an event's unfinished parts: its fan-out pass, and each first
// attempt started for it.
type eventProgress struct {
	left   atomic.Int32
	failed atomic.Bool
}

// fanOut makes the deliveries of evs: resources, cancelled rows, and first attempts (which
// go on after it returns). It says which events have all their deliveries (done), which do
// not (failed), with the first error, and how many wait for first attempts (running).
func (w *WebhookDispatcher) fanOut(ctx context.Context, evs []store.PendingEvent) (done, failed []uuid.UUID, running int, err error) {
	if w.Parallel <= 0 {
		w.Parallel = 32
	}
	endpoints := map[string][]switchboardv1alpha1.WebhookEndpoint{}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		slots    = make(chan struct{}, w.Parallel)
		progress = make(map[uuid.UUID]*eventProgress, len(evs))
	)
	fail := func(p *eventProgress, err error) {
		p.failed.Store(true)
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, ev := range evs {
		p := &eventProgress{}
		p.left.Store(1) // this pass
		progress[ev.OutboxID] = p
		eps, ok := endpoints[ev.AccountPublicID]
		if !ok {
			list := &switchboardv1alpha1.WebhookEndpointList{}
			if err := w.Reader.List(ctx, list, client.InNamespace(tenancy.Namespace(ev.AccountPublicID))); err != nil {
				fail(p, err)
				continue
			}
			eps = list.Items
			endpoints[ev.AccountPublicID] = eps
		}
		for i := range eps {
			ep := &eps[i]
			if ep.DeletionTimestamp != nil || ep.Spec.AccountID != ev.AccountPublicID || !addressed(ev, ep) {
				continue
			}
			slots <- struct{}{}
			wg.Add(1)
			go func(ev store.PendingEvent) {
				defer wg.Done()
				defer func() { <-slots }()
				if err := w.deliver(ctx, ev, ep, p); err != nil {
					fail(p, err)
				}
			}(ev)
		}
	}
	wg.Wait()
	for _, ev := range evs {
		p := progress[ev.OutboxID]
		switch {
		case p.left.Add(-1) > 0:
			running++ // its last first attempt marks or releases it
		case p.failed.Load():
			failed = append(failed, ev.OutboxID)
		default:
			done = append(done, ev.OutboxID)
		}
	}
	return done, failed, running, firstErr
}

// addressed reports whether ev goes to ep: the one endpoint it was queued for (a test
// event), or else every endpoint that subscribes to its type.
func addressed(ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint) bool {
	if ev.EndpointPublicID != "" {
		return ep.Name == ev.EndpointPublicID
	}
	return webhooks.Subscribed(ep, ev.Type)
}

// deliver makes the delivery of ev to ep: a first attempt when the engine admits it, a
// resource otherwise, or a cancelled row when ep is paused or already has
// MaxLivePerEndpoint live deliveries.
func (w *WebhookDispatcher) deliver(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, p *eventProgress) error {
	if !webhooks.Deliverable(ep) {
		// Paused or switched off: the event is not delivered; it is listed as cancelled
		// and can be resent once the endpoint is active.
		return w.recordCancelled(ctx, ev, ep, webhooks.DeliveryName(ev.ID.String(), ep.Name, ev.DeliverySalt()),
			"The endpoint was paused or switched off when the event occurred")
	}
	// A repeat goes to the controller, which checks the history before an attempt.
	if w.First != nil && !ev.Repeat {
		if admitted, ok := w.First.Admit(ep); ok {
			secret, err := signingSecret(ctx, w.Client, w.Reader, ep)
			if err != nil {
				admitted()
				return err
			}
			if secret != "" {
				p.left.Add(1)
				w.jobs.Add(1)
				go w.firstAttempt(ctx, ev, ep, secret, admitted, p)
				return nil
			}
			admitted() // a just-created endpoint without its secret yet: the controller waits for it
		}
	}
	return w.createDelivery(ctx, ev, ep, nil, nil)
}

// firstAttempt runs an admitted first attempt, hands the delivery to the controller when it
// needs it, and finishes the event when it is the event's last part.
func (w *WebhookDispatcher) firstAttempt(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, secret string,
	admitted func(), p *eventProgress) {
	defer w.jobs.Done()
	ok := func() bool {
		defer admitted()
		name := webhooks.DeliveryName(ev.ID.String(), ep.Name, ev.DeliverySalt())
		res, sentAt, outcome, err := w.First.Attempt(ctx, delivery.FirstAttempt{Endpoint: ep, Secret: secret,
			AccountPublicID: ev.AccountPublicID, DeliveryName: name, EventID: ev.ID, EventType: ev.Type, Body: ev.Body,
			CreatedAt: w.Clock.Now(), EventCreatedAt: ev.CreatedAt})
		switch outcome {
		case delivery.Abandoned:
			return false
		case delivery.NotAttempted:
			err = w.createDelivery(ctx, ev, ep, nil, nil)
		case delivery.NeedsRetry:
			err = w.createDelivery(ctx, ev, ep, func(d *switchboardv1alpha1.WebhookDelivery) {
				if d.Annotations == nil {
					d.Annotations = map[string]string{}
				}
				d.Annotations[webhooks.AnnotationFirstAttempt] = sentAt.UTC().Format(time.RFC3339Nano)
			}, func(d *switchboardv1alpha1.WebhookDelivery) { firstAttemptFailed(d, sentAt, res) })
		}
		if err != nil && ctx.Err() == nil {
			w.Log.Error(err, "first webhook attempt", "event", ev.ID, "endpoint", ep.Name)
		}
		return err == nil
	}()
	if !ok {
		p.failed.Store(true)
	}
	if p.left.Add(-1) > 0 {
		return
	}
	// The event's last part: mark it, or give its claim back (also when ctx ended).
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var err error
	if p.failed.Load() {
		err = w.Store.ReleaseEvents(bg, []uuid.UUID{ev.OutboxID})
	} else {
		err = w.Store.MarkEventDispatched(bg, ev.OutboxID, w.Clock.Now())
	}
	if err != nil {
		w.Log.Error(err, "finish webhook event", "event", ev.ID) // the claim's lease ends; it is taken again
	}
}

// firstAttemptFailed is the status of a delivery whose first attempt, made by the engine,
// failed: retrying on the spec's schedule.
func firstAttemptFailed(d *switchboardv1alpha1.WebhookDelivery, sentAt time.Time, res webhooks.Result) {
	next, _ := webhooks.NextAttempt(1, sentAt)
	d.Status = switchboardv1alpha1.WebhookDeliveryStatus{Phase: switchboardv1alpha1.WebhookDeliveryPhaseRetrying, Attempts: 1,
		LastAttemptAt: &metav1.Time{Time: sentAt}, LastResponseCode: int32(res.StatusCode), LastError: truncate(res.Error, 1024),
		NextAttemptAt: &metav1.Time{Time: next}, ObservedGeneration: d.Generation}
	setDeliveryConditions(d, switchboardv1alpha1.ReasonRetryScheduled, "Attempt failed ("+d.Status.LastError+"); retry at "+next.UTC().Format(time.RFC3339))
}

// createDelivery creates the resource of ev's delivery to ep, as meta changes it and with
// the status status sets (nil: a new delivery), or records it cancelled when ep already has
// MaxLivePerEndpoint live deliveries. A resource that already exists (a repeat) is left as
// it is.
func (w *WebhookDispatcher) createDelivery(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint,
	meta, status func(*switchboardv1alpha1.WebhookDelivery)) error {
	d := webhooks.NewDelivery(ep, ev.ID.String(), ev.Type, ev.ResendOf, ev.DeliverySalt())
	if meta != nil {
		meta(d)
	}
	if w.Backlog != nil {
		if live, ok := w.Backlog.ReserveIfRoom(client.ObjectKeyFromObject(d), client.ObjectKeyFromObject(ep), w.MaxLivePerEndpoint); !ok {
			return w.recordCancelled(ctx, ev, ep, d.Name, fmt.Sprintf(
				"Not attempted: %d deliveries to this endpoint were already waiting or retrying; resend it once the endpoint recovers", live))
		}
	}
	err := w.Client.Create(ctx, d)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil && status != nil {
		status(d)
		err = w.Client.Status().Update(ctx, d)
	}
	if err != nil && w.Backlog != nil {
		w.Backlog.Unreserve(client.ObjectKeyFromObject(d))
	}
	return err
}

// recordCancelled lists the event's delivery to ep as cancelled (resendable), without a
// resource.
func (w *WebhookDispatcher) recordCancelled(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, name, why string) error {
	now := w.Clock.Now()
	err := w.Store.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: ev.AccountPublicID,
		EndpointPublicID: ep.Name, DeliveryName: name, EventID: ev.ID, EventType: ev.Type, Status: webhooks.DeliveryCancelled,
		LastError: why, CreatedAt: now, FinishedAt: now})
	if err == nil {
		metrics.WebhookDeliveryFinished(switchboardv1alpha1.WebhookDeliveryPhaseCancelled)
	}
	return err
}
