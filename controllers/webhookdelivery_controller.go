/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
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
	// Engine makes the attempts (in its per-endpoint slots, which park a delivery that finds
	// them taken) and writes finished deliveries; the dispatcher shares it.
	Engine *engine.Engine
	// MaxConcurrentReconciles bounds attempts in flight overall (default 64).
	MaxConcurrentReconciles int
	// MaxRequeue caps retry timers (see WebhookEndpointReconciler.MaxRequeue).
	MaxRequeue time.Duration
	// Recorder, when set, records a Warning Event on the endpoint when a delivery fails
	// for good (the delivery's own resource is removed soon after, its Event would not be).
	Recorder events.EventRecorder
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
	if r.Engine == nil {
		return errors.New("the WebhookDelivery reconciler needs the delivery engine")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &switchboardv1alpha1.WebhookDelivery{}, deliveryEndpointIndex, func(o client.Object) []string {
		return []string{o.(*switchboardv1alpha1.WebhookDelivery).Spec.EndpointName}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// A deletion needs no reconcile: it only forgets what was kept about the delivery.
		For(&switchboardv1alpha1.WebhookDelivery{}, builder.WithPredicates(predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
			if d, ok := e.Object.(*switchboardv1alpha1.WebhookDelivery); ok {
				r.Engine.Slots.Forget(endpointKey(d), client.ObjectKeyFromObject(d))
			}
			return false
		}})).
		Watches(&switchboardv1alpha1.WebhookEndpoint{}, r.endpointEvents()).
		WatchesRawSource(source.Channel(r.Engine.ListenParked(), &handler.EnqueueRequestForObject{})).
		Named("webhookdelivery").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile advances one delivery: it asks engine.Plan what the delivery needs and does
// that; the deferred patch writes the status it decided (nothing when it only waits).
func (r *WebhookDeliveryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := logf.FromContext(ctx)
	d := &switchboardv1alpha1.WebhookDelivery{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() || r.Engine.Removed.Has(d.UID) {
		return ctrl.Result{}, nil
	}

	base := d.DeepCopy()
	st := &deliveryState{}
	defer func() {
		if st.removed {
			return
		}
		if err := r.patchDeliveryStatus(ctx, base, d, reterr == nil); err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "patch delivery status")
			if reterr == nil {
				reterr = err
			}
		}
	}()

	ep, err := r.endpoint(ctx, endpointKey(d))
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := engine.Plan(d, ep, r.Clock.Now())
	switch plan.Action {
	case engine.Finish:
		return ctrl.Result{}, r.finish(ctx, d, st)
	case engine.Cancel:
		return ctrl.Result{}, r.cancel(ctx, d, st, plan.Reason, plan.Message)
	case engine.Wait:
		return ctrl.Result{RequeueAfter: capWait(plan.Until.Sub(r.Clock.Now()), r.MaxRequeue)}, nil
	default:
		return r.reconcileAttempt(ctx, d, ep, st)
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
		list := &switchboardv1alpha1.WebhookDeliveryList{}
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
			oldEp, newEp := e.ObjectOld.(*switchboardv1alpha1.WebhookEndpoint), e.ObjectNew.(*switchboardv1alpha1.WebhookEndpoint)
			if newEp.DeletionTimestamp != nil {
				r.Engine.InFlight.Cancel(client.ObjectKeyFromObject(newEp))
			}
			if send.Deliverable(oldEp) != send.Deliverable(newEp) || oldEp.Spec.URL != newEp.Spec.URL {
				enqueue(ctx, newEp, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.Engine.InFlight.Cancel(client.ObjectKeyFromObject(e.Object))
			r.Engine.Health.Forget(client.ObjectKeyFromObject(e.Object))
			r.Engine.Throttle.Forget(client.ObjectKeyFromObject(e.Object))
			enqueue(ctx, e.Object, q)
		},
	}
}

// endpointKey is the key of d's endpoint.
func endpointKey(d *switchboardv1alpha1.WebhookDelivery) types.NamespacedName {
	return types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.EndpointName}
}
