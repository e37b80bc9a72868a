/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// WebhookEndpointReconciler keeps an endpoint's signing secret, phase (Active, Paused,
// SwitchedOff) and conditions, switches it off after 24 hours of continuous failure and
// emails the account's owners once when it does.
type WebhookEndpointReconciler struct {
	client.Client
	// APIReader reads Secrets the cache does not hold (see CacheOptions); default the
	// manager's.
	APIReader client.Reader
	Store     *store.Store
	Clock     clock.PassiveClock
	Mailer    send.Mailer
	// Recorder, when set, records Kubernetes Events on endpoints (never with the secret).
	Recorder events.EventRecorder
	// MaxRequeue caps how long a timer (the switch-off deadline) waits before looking at the
	// clock again; 0 means no cap. Tests with a fake clock set it short.
	MaxRequeue time.Duration
}

// SetupWithManager registers the controller; it also watches the Secrets endpoints own.
func (r *WebhookEndpointReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&switchboardv1alpha1.WebhookEndpoint{}).
		Owns(&corev1.Secret{}).
		Named("webhookendpoint").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile brings one endpoint to the state its spec asks for.
func (r *WebhookEndpointReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := logf.FromContext(ctx)
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	if err := r.Get(ctx, req.NamespacedName, ep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ep.DeletionTimestamp.IsZero() {
		// The Secret and the deliveries are owned by the endpoint: garbage collection
		// removes them; the delivery controller stops attempts in flight at once.
		return ctrl.Result{}, nil
	}

	base := ep.DeepCopy()
	defer func() {
		if err := r.patchEndpointStatus(ctx, base, ep, reterr == nil); err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "patch endpoint status")
			if reterr == nil {
				reterr = err
			}
		}
	}()
	return r.reconcileNormal(ctx, ep)
}

func (r *WebhookEndpointReconciler) reconcileNormal(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) (ctrl.Result, error) {
	if res, err := r.reconcileSigningSecret(ctx, ep); err != nil || !res.IsZero() {
		return res, err
	}
	r.reconcilePhase(ep)
	if err := r.reconcileOwnersNotice(ctx, ep); err != nil {
		return ctrl.Result{}, err
	}
	return r.switchOffTimer(ep), nil
}
