/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sbv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// deliveryEndpointIndex indexes WebhookDeliveries by spec.endpointName.
const deliveryEndpointIndex = "spec.endpointName"

// WebhookDeliveryReconciler sends each delivery's attempts: signed at send time with the
// endpoint's current secret, retried on the spec's schedule, cancelled when the endpoint is
// paused, switched off or removed. A finished delivery is written to the PostgreSQL history
// and its resource deleted, so etcd holds only live deliveries.
type WebhookDeliveryReconciler struct {
	client.Client
	// APIReader reads past the cache where a miss would be acted on (an endpoint that looks
	// absent only because the cache has not seen it yet).
	APIReader client.Reader
	Store     *store.Store
	Clock     clock.PassiveClock
	Sender    *webhooks.Sender
	// MaxConcurrentReconciles bounds attempts in flight overall (default 64).
	MaxConcurrentReconciles int
	// PerEndpoint bounds attempts in flight to one endpoint (default 8), so an endpoint that
	// hangs holds that many workers at most and the others keep theirs.
	PerEndpoint int
	// MaxRequeue caps retry timers (see WebhookEndpointReconciler.MaxRequeue).
	MaxRequeue time.Duration
	// HealthWriteGap is the least time between two writes of an endpoint's health
	// (webhookendpoint_health.go; default 1 s), timed by WriteTimer (default real time,
	// also when Clock is a fake: it spaces API writes, it decides nothing).
	HealthWriteGap time.Duration
	WriteTimer     clock.Clock
	// Recorder, when set, records a Warning Event on the endpoint when a delivery fails
	// for good (the delivery's own resource is removed soon after, its Event would not be).
	Recorder events.EventRecorder
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool

	mu       sync.Mutex
	slots    map[types.NamespacedName]chan struct{}
	inflight map[types.NamespacedName]map[string]context.CancelFunc
	// parked are deliveries that found their endpoint's slots taken; a released slot wakes
	// the first of them through wake (they also come back by themselves after parkedRetry).
	parked map[types.NamespacedName]*parkQueue
	wake   chan event.GenericEvent
	// removed are deliveries this controller deleted recently (two generations of up to
	// removedKept each): a reconcile of a stale cached copy would only repeat the delete.
	removed, removedBefore map[types.UID]struct{}
	// health is each endpoint's health-write state (recordEndpointHealth); healthLog logs
	// the writes' failures (they run outside any reconcile).
	health    map[types.NamespacedName]*endpointHealthState
	healthLog logr.Logger
}

// removedKept bounds each generation of removed; the cache catches up long before a
// generation is dropped.
const removedKept = 10000

// parkQueue is an endpoint's parked deliveries in order; a delivery that got a slot some
// other way (its own event) leaves the set, and its stale place in order is skipped.
type parkQueue struct {
	order []types.NamespacedName
	in    map[types.NamespacedName]bool
}

// parkedRetry is when a parked delivery looks again if no slot release woke it.
const parkedRetry = time.Minute

// SetupWithManager registers the controller, the endpoint-name index and the endpoint watch
// (pause, switch-off and removal reach pending deliveries at once).
func (r *WebhookDeliveryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 64
	}
	if r.PerEndpoint <= 0 {
		r.PerEndpoint = 8
	}
	if r.HealthWriteGap <= 0 {
		r.HealthWriteGap = defaultHealthWriteGap
	}
	if r.WriteTimer == nil {
		r.WriteTimer = clock.RealClock{}
	}
	r.healthLog = mgr.GetLogger().WithName("webhook-endpoint-health")
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.slots = map[types.NamespacedName]chan struct{}{}
	r.inflight = map[types.NamespacedName]map[string]context.CancelFunc{}
	r.parked = map[types.NamespacedName]*parkQueue{}
	r.removed = map[types.UID]struct{}{}
	r.wake = make(chan event.GenericEvent, 4096)
	if err := mgr.GetFieldIndexer().IndexField(ctx, &sbv1.WebhookDelivery{}, deliveryEndpointIndex, func(o client.Object) []string {
		return []string{o.(*sbv1.WebhookDelivery).Spec.EndpointName}
	}); err != nil {
		return err
	}
	skip := r.SkipNameValidation
	return ctrl.NewControllerManagedBy(mgr).
		// A deletion needs no reconcile: it only forgets what was kept about the delivery.
		For(&sbv1.WebhookDelivery{}, builder.WithPredicates(predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
			r.forget(e.Object)
			return false
		}})).
		Watches(&sbv1.WebhookEndpoint{}, r.endpointEvents()).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, SkipNameValidation: &skip}).
		Complete(r)
}

// Reconcile advances one delivery.
func (r *WebhookDeliveryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := logr.FromContextOrDiscard(ctx)
	d := &sbv1.WebhookDelivery{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() || r.wasRemoved(d.UID) {
		return ctrl.Result{}, nil
	}

	base := d.DeepCopy()
	st := &deliveryState{}
	defer func() {
		if st.removed {
			return
		}
		if err := r.patchStatus(ctx, base, d); err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "patch delivery status")
			if reterr == nil {
				reterr = err
			}
		}
	}()

	switch d.Status.Phase {
	case sbv1.WebhookDeliveryPhaseSucceeded, sbv1.WebhookDeliveryPhaseFailed, sbv1.WebhookDeliveryPhaseCancelled:
		return ctrl.Result{}, r.finish(ctx, d, st)
	default:
		return r.reconcileAttempt(ctx, d, st)
	}
}

// deliveryState carries what the phase functions decided to the deferred status patch.
type deliveryState struct {
	// removed: the resource was deleted after its history row was written.
	removed bool
}

// endpointEvents maps endpoint changes that matter to deliveries (removal, pause,
// switch-off, switch-on) to that endpoint's deliveries, and cancels attempts in flight to
// a removed endpoint.
func (r *WebhookDeliveryReconciler) endpointEvents() handler.EventHandler {
	enqueue := func(ctx context.Context, ep client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		list := &sbv1.WebhookDeliveryList{}
		if err := r.List(ctx, list, client.InNamespace(ep.GetNamespace()), client.MatchingFields{deliveryEndpointIndex: ep.GetName()}); err != nil {
			return
		}
		for _, d := range list.Items {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldEp, newEp := e.ObjectOld.(*sbv1.WebhookEndpoint), e.ObjectNew.(*sbv1.WebhookEndpoint)
			if newEp.DeletionTimestamp != nil {
				r.cancelInFlight(client.ObjectKeyFromObject(newEp))
			}
			if webhooks.Deliverable(oldEp) != webhooks.Deliverable(newEp) || oldEp.Spec.URL != newEp.Spec.URL {
				enqueue(ctx, newEp, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.cancelInFlight(client.ObjectKeyFromObject(e.Object))
			r.mu.Lock()
			delete(r.health, client.ObjectKeyFromObject(e.Object))
			r.mu.Unlock()
			enqueue(ctx, e.Object, q)
		},
	}
}

// acquire takes one of the endpoint's slots without waiting. When none is free the
// delivery is parked: the next release wakes it, so a busy or hanging endpoint's backlog
// waits without spinning through the workers.
func (r *WebhookDeliveryReconciler) acquire(ep, delivery types.NamespacedName) (release func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := r.slots[ep]
	if slot == nil {
		slot = make(chan struct{}, r.PerEndpoint)
		r.slots[ep] = slot
	}
	q := r.parked[ep]
	select {
	case slot <- struct{}{}:
		if q != nil {
			delete(q.in, delivery)
		}
		return func() { r.releaseSlot(ep, slot) }, true
	default:
		if q == nil {
			q = &parkQueue{in: map[types.NamespacedName]bool{}}
			r.parked[ep] = q
		}
		if !q.in[delivery] {
			q.in[delivery] = true
			q.order = append(q.order, delivery)
		}
		return nil, false
	}
}

func (r *WebhookDeliveryReconciler) releaseSlot(ep types.NamespacedName, slot chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	<-slot
	q := r.parked[ep]
	if q == nil {
		return
	}
	for len(q.order) > 0 {
		next := q.order[0]
		q.order = q.order[1:]
		if !q.in[next] {
			continue // it got a slot meanwhile, or was deleted
		}
		delete(q.in, next)
		select {
		case r.wake <- event.GenericEvent{Object: &sbv1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: next.Namespace, Name: next.Name}}}:
		default: // full: it comes back after parkedRetry
		}
		break
	}
	if len(q.in) == 0 {
		delete(r.parked, ep)
	}
}

// removedNow notes a delivery this controller deleted (see removed).
func (r *WebhookDeliveryReconciler) removedNow(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.removed) >= removedKept {
		r.removedBefore, r.removed = r.removed, map[types.UID]struct{}{}
	}
	r.removed[uid] = struct{}{}
}

func (r *WebhookDeliveryReconciler) wasRemoved(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.removed[uid]
	if !ok {
		_, ok = r.removedBefore[uid]
	}
	return ok
}

// forget drops the parked place of a deleted delivery.
func (r *WebhookDeliveryReconciler) forget(o client.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := o.(*sbv1.WebhookDelivery); ok {
		ep := types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.EndpointName}
		if q := r.parked[ep]; q != nil {
			delete(q.in, client.ObjectKeyFromObject(d))
			if len(q.in) == 0 {
				delete(r.parked, ep)
			}
		}
	}
}

// track registers an attempt in flight so that removing its endpoint cancels it.
func (r *WebhookDeliveryReconciler) track(ep types.NamespacedName, delivery string, cancel context.CancelFunc) (untrack func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.inflight[ep]
	if m == nil {
		m = map[string]context.CancelFunc{}
		r.inflight[ep] = m
	}
	m[delivery] = cancel
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.inflight[ep], delivery)
		if len(r.inflight[ep]) == 0 {
			delete(r.inflight, ep)
		}
	}
}

func (r *WebhookDeliveryReconciler) cancelInFlight(ep types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cancel := range r.inflight[ep] {
		cancel()
	}
}
