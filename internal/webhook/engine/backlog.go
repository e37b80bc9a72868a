/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Backlog tells the dispatcher how much delivery work is waiting, so that it creates
// no more WebhookDeliveries than the controller works through and etcd stays small however
// large a burst of events is. It follows the informer cache: a delivery is pending from its
// creation (counted from the moment the dispatcher reserves it, before the cache shows it)
// until its first attempt is recorded or it is deleted. Pending deliveries of an endpoint
// that has been failing for failingGrace do not count: such an endpoint holds its own
// backlog (until it recovers or is switched off) without holding back the others.
type Backlog struct {
	Clock clock.PassiveClock

	mu         sync.Mutex
	deliveries map[types.NamespacedName]backlogEntry
	pending    map[types.NamespacedName]int       // by endpoint
	live       map[types.NamespacedName]int       // by endpoint, pending or retrying
	failing    map[types.NamespacedName]time.Time // endpoint → failingSince
	changed    chan struct{}
	freed      chan struct{}
}

type backlogEntry struct {
	endpoint types.NamespacedName
	pending  bool
	// reserved: counted by the dispatcher, not yet seen in the cache.
	reserved bool
}

// NewBacklog makes an empty backlog; SetupWithManager feeds it.
func NewBacklog(clk clock.PassiveClock) *Backlog {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Backlog{Clock: clk, deliveries: map[types.NamespacedName]backlogEntry{},
		pending: map[types.NamespacedName]int{}, live: map[types.NamespacedName]int{}, failing: map[types.NamespacedName]time.Time{}, changed: make(chan struct{}, 1),
		freed: make(chan struct{}, 1)}
}

// SetupWithManager follows WebhookDeliveries and WebhookEndpoints through the manager's cache.
func (b *Backlog) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(ctx, &switchboardv1alpha1.WebhookDelivery{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { b.seen(o) },
		UpdateFunc: func(_, o any) { b.seen(o) },
		DeleteFunc: func(o any) { b.gone(o) },
	}); err != nil {
		return err
	}
	epInf, err := mgr.GetCache().GetInformer(ctx, &switchboardv1alpha1.WebhookEndpoint{})
	if err != nil {
		return err
	}
	_, err = epInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { b.endpointSeen(o) },
		UpdateFunc: func(_, o any) { b.endpointSeen(o) },
		DeleteFunc: func(o any) { b.endpointGone(o) },
	})
	return err
}

func deliveryPending(d *switchboardv1alpha1.WebhookDelivery) bool {
	switch d.Status.Phase {
	case switchboardv1alpha1.WebhookDeliveryPhaseSucceeded, switchboardv1alpha1.WebhookDeliveryPhaseFailed, switchboardv1alpha1.WebhookDeliveryPhaseCancelled:
		return false
	}
	return d.Status.Attempts == 0
}

// set replaces a delivery's entry (nil removes it); called with mu held.
func (b *Backlog) set(key types.NamespacedName, e *backlogEntry) {
	old, had := b.deliveries[key]
	if had {
		b.live[old.endpoint]--
		if b.live[old.endpoint] <= 0 {
			delete(b.live, old.endpoint)
		}
	}
	if had && old.pending {
		b.pending[old.endpoint]--
		if b.pending[old.endpoint] <= 0 {
			delete(b.pending, old.endpoint)
		}
		if e == nil || !e.pending {
			b.signal()
		}
	}
	if e == nil {
		delete(b.deliveries, key)
		if had {
			b.signal()
			select {
			case b.freed <- struct{}{}:
			default:
			}
		}
		return
	}
	b.deliveries[key] = *e
	b.live[e.endpoint]++
	if e.pending {
		b.pending[e.endpoint]++
	}
}

func (b *Backlog) signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *Backlog) seen(o any) {
	d, ok := o.(*switchboardv1alpha1.WebhookDelivery)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set(client.ObjectKeyFromObject(d), &backlogEntry{endpoint: types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.EndpointName},
		pending: deliveryPending(d)})
}

func (b *Backlog) gone(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	d, ok := o.(*switchboardv1alpha1.WebhookDelivery)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set(client.ObjectKeyFromObject(d), nil)
}

func (b *Backlog) endpointSeen(o any) {
	ep, ok := o.(*switchboardv1alpha1.WebhookEndpoint)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := client.ObjectKeyFromObject(ep)
	_, was := b.failing[key]
	if ep.Status.FailingSince != nil {
		b.failing[key] = ep.Status.FailingSince.Time
	} else {
		delete(b.failing, key)
	}
	if was != (ep.Status.FailingSince != nil) {
		b.signal()
	}
}

func (b *Backlog) endpointGone(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if ep, ok := o.(*switchboardv1alpha1.WebhookEndpoint); ok {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.failing, client.ObjectKeyFromObject(ep))
		b.signal()
	}
}

// ReserveIfRoom counts a delivery the dispatcher is about to create, unless the endpoint
// already has maxLive live deliveries or all endpoints maxTotal (0 or less: no bound); the
// check and the count are one step, so parallel creations on this replica cannot overshoot.
// It returns the endpoint's live deliveries and whether the delivery may be created (a
// repeat of a known creation may).
func (b *Backlog) ReserveIfRoom(delivery, endpoint types.NamespacedName, maxLive, maxTotal int) (live int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live = b.live[endpoint]
	if _, known := b.deliveries[delivery]; known {
		return live, true
	}
	if (maxLive > 0 && live >= maxLive) || (maxTotal > 0 && len(b.deliveries) >= maxTotal) {
		return live, false
	}
	b.set(delivery, &backlogEntry{endpoint: endpoint, pending: true, reserved: true})
	return live + 1, true
}

// HasRoom is whether ReserveIfRoom would count a new delivery to endpoint now.
func (b *Backlog) HasRoom(endpoint types.NamespacedName, maxLive, maxTotal int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return (maxLive <= 0 || b.live[endpoint] < maxLive) && (maxTotal <= 0 || len(b.deliveries) < maxTotal)
}

// Unreserve drops a reservation whose creation failed (unless the cache has shown it since).
func (b *Backlog) Unreserve(delivery types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.deliveries[delivery]; ok && e.reserved {
		b.set(delivery, nil)
	}
}

// Load is the number of pending deliveries that count (see Backlog) and of all
// live deliveries.
func (b *Backlog) Load() (pending, live int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return backlogLoad(b.pending, b.failing, b.Clock.Now(), failingGrace, nil), len(b.deliveries)
}

// LoadSkipping is Load without the pending deliveries of the endpoints stalled says are
// stalled: the delivery engine sees no attempt to them succeed (they hang, or are down) well
// before their status has shown them failing for failingGrace, and like those they hold
// their own backlog, bounded by MaxLivePerEndpoint (the rest deferred in PostgreSQL), without
// holding back the others.
func (b *Backlog) LoadSkipping(stalled func(endpoint types.NamespacedName) bool) (pending, live int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return backlogLoad(b.pending, b.failing, b.Clock.Now(), failingGrace, stalled), len(b.deliveries)
}

// Live is a copy of the live deliveries of each endpoint that has some, and their total.
func (b *Backlog) Live() (byEndpoint map[types.NamespacedName]int, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	byEndpoint = make(map[types.NamespacedName]int, len(b.live))
	for ep, n := range b.live {
		byEndpoint[ep] = n
	}
	return byEndpoint, len(b.deliveries)
}

// Freed is signalled when a live delivery is removed (room for a deferred one).
func (b *Backlog) Freed() <-chan struct{} { return b.freed }

// Changed is signalled when a pending delivery stops pending or an endpoint's health changes.
func (b *Backlog) Changed() <-chan struct{} { return b.changed }

// backlogLoad sums the pending deliveries of endpoints that have not been failing for grace
// and are not stalled (nil: none is).
func backlogLoad(pending map[types.NamespacedName]int, failing map[types.NamespacedName]time.Time, now time.Time, grace time.Duration,
	stalled func(types.NamespacedName) bool) int {
	n := 0
	for ep, c := range pending {
		if since, ok := failing[ep]; ok && now.Sub(since) >= grace {
			continue
		}
		if stalled != nil && stalled(ep) {
			continue
		}
		n += c
	}
	return n
}

// eventsToDispatch is how many outbox events the dispatcher takes now, given maxPending
// (0: no bound), the pending load, the batch size and the most deliveries one event makes
// (fanOut). Each event taken has room for all its deliveries. Below a quarter of maxPending's
// worth of events it waits for more room rather than take events one at a time — unless
// nothing is pending at all. The live deliveries do not hold claims back: past their caps a
// delivery that needs a resource is deferred in PostgreSQL instead, so first attempts to
// healthy endpoints go on.
func eventsToDispatch(maxPending, load, batch, fanOut int) int {
	if maxPending <= 0 {
		return batch
	}
	n := min(batch, (maxPending-load)/fanOut)
	if n <= 0 {
		return 0
	}
	if load > 0 && n < min(batch, max(1, maxPending/(4*fanOut))) {
		return 0
	}
	return n
}
