/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sbv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// WebhookDispatcher fans undispatched outbox events out to WebhookDeliveries: one per
// endpoint of the event's account that subscribes to its type. It runs on the leader only.
//
// Delivery names are a hash of event id and endpoint, so when the dispatcher stops after
// creating some deliveries and before marking the event dispatched, the next pass creates
// the same names again (AlreadyExists) — at least once, never twice per endpoint, and a
// repeat carries the same event id. Events for an endpoint that is paused or switched off are
// recorded as cancelled deliveries (resendable) without a resource.
type WebhookDispatcher struct {
	// Client creates deliveries; Reader lists endpoints past the cache (an endpoint created
	// a moment ago must receive the next event).
	Client client.Client
	Reader client.Reader
	Store  *store.Store
	Clock  clock.PassiveClock
	// Interval is how often the outbox is polled when it was empty (default 500 ms).
	Interval time.Duration
	// BatchSize is how many events one transaction takes (default 200).
	BatchSize int
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
	Log                logr.Logger
}

// DefaultMaxPendingDeliveries bounds the deliveries waiting for a first attempt.
const DefaultMaxPendingDeliveries = 2000

// DefaultMaxLiveDeliveriesPerEndpoint bounds one endpoint's live deliveries.
const DefaultMaxLiveDeliveriesPerEndpoint = 10000

// NeedLeaderElection: one dispatcher at a time (FOR UPDATE SKIP LOCKED keeps two safe too).
func (w *WebhookDispatcher) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (w *WebhookDispatcher) Start(ctx context.Context) error {
	w.defaults()
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
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 200
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
	if w.Backlog == nil {
		return w.BatchSize
	}
	pending, live := w.Backlog.Load()
	return eventsToDispatch(w.MaxPending, pending, live, w.MaxLive, w.BatchSize, sbv1.MaxWebhookEndpointsPerAccount)
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

func (w *WebhookDispatcher) dispatch(ctx context.Context, limit int) (int, error) {
	return w.Store.DispatchEvents(ctx, limit, w.Clock.Now, w.fanOut)
}

func (w *WebhookDispatcher) fanOut(ctx context.Context, evs []store.PendingEvent) ([]uuid.UUID, error) {
	if w.Parallel <= 0 {
		w.Parallel = 32
	}
	endpoints := map[string][]sbv1.WebhookEndpoint{}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		failed   = map[uuid.UUID]bool{}
		firstErr error
		slots    = make(chan struct{}, w.Parallel)
	)
	fail := func(id uuid.UUID, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed[id] = true
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, ev := range evs {
		eps, ok := endpoints[ev.AccountPublicID]
		if !ok {
			list := &sbv1.WebhookEndpointList{}
			if err := w.Reader.List(ctx, list, client.InNamespace(tenancy.Namespace(ev.AccountPublicID))); err != nil {
				fail(ev.ID, err)
				continue
			}
			eps = list.Items
			endpoints[ev.AccountPublicID] = eps
		}
		for i := range eps {
			ep := &eps[i]
			if ep.DeletionTimestamp != nil || ep.Spec.AccountID != ev.AccountPublicID || !webhooks.Subscribed(ep, ev.Type) {
				continue
			}
			slots <- struct{}{}
			wg.Add(1)
			go func(ev store.PendingEvent) {
				defer wg.Done()
				defer func() { <-slots }()
				if err := w.deliver(ctx, ev, ep); err != nil {
					fail(ev.ID, err)
				}
			}(ev)
		}
	}
	wg.Wait()
	done := make([]uuid.UUID, 0, len(evs))
	for _, ev := range evs {
		if !failed[ev.ID] {
			done = append(done, ev.ID)
		}
	}
	return done, firstErr
}

// deliver creates the delivery of ev to ep, or records it cancelled when ep is paused or
// already has MaxLivePerEndpoint live deliveries.
func (w *WebhookDispatcher) deliver(ctx context.Context, ev store.PendingEvent, ep *sbv1.WebhookEndpoint) error {
	d := webhooks.NewDelivery(ep, ev.ID.String(), ev.Type, "", "")
	if !webhooks.Deliverable(ep) {
		// Paused or switched off: the event is not delivered; it is listed as cancelled
		// and can be resent once the endpoint is active.
		return w.recordCancelled(ctx, ev, ep, d.Name, "The endpoint was paused or switched off when the event occurred")
	}
	if w.Backlog != nil {
		if live, ok := w.Backlog.ReserveIfRoom(client.ObjectKeyFromObject(d), client.ObjectKeyFromObject(ep), w.MaxLivePerEndpoint); !ok {
			return w.recordCancelled(ctx, ev, ep, d.Name, fmt.Sprintf(
				"Not attempted: %d deliveries to this endpoint were already waiting or retrying; resend it once the endpoint recovers", live))
		}
	}
	if err := w.Client.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		if w.Backlog != nil {
			w.Backlog.Unreserve(client.ObjectKeyFromObject(d))
		}
		return err
	}
	return nil
}

// recordCancelled lists the event's delivery to ep as cancelled (resendable), without a
// resource.
func (w *WebhookDispatcher) recordCancelled(ctx context.Context, ev store.PendingEvent, ep *sbv1.WebhookEndpoint, name, why string) error {
	now := w.Clock.Now()
	err := w.Store.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: ev.AccountPublicID,
		EndpointPublicID: ep.Name, DeliveryName: name, EventID: ev.ID, EventType: ev.Type, Status: "cancelled",
		LastError: why, CreatedAt: now, FinishedAt: now})
	if err == nil {
		metrics.WebhookDeliveryFinished(sbv1.WebhookDeliveryPhaseCancelled)
	}
	return err
}
