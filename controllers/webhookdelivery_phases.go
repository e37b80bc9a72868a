/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// throttleWaitInline is the longest a worker waits for a rate-limited endpoint's turn.
const throttleWaitInline = 100 * time.Millisecond

// reconcileAttempt makes the attempt that is due, in one of the endpoint's slots.
func (r *WebhookDeliveryReconciler) reconcileAttempt(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, ep *switchboardv1alpha1.WebhookEndpoint,
	st *deliveryState) (ctrl.Result, error) {
	epKey := endpointKey(d)
	// A new delivery keeps an empty status until an attempt fails (the API shows it as
	// pending): a delivery that succeeds first time costs the API server two writes only,
	// its creation and its deletion.
	release, ok := r.Engine.Slots.Acquire(epKey, client.ObjectKeyFromObject(d))
	if !ok {
		// The endpoint has PerEndpoint attempts in flight: give the worker back; a released
		// slot wakes this delivery (parkedRetry is the fallback).
		return ctrl.Result{RequeueAfter: parkedRetry + time.Duration(rand.IntN(5000))*time.Millisecond}, nil
	}
	// The slot bounds attempts in flight to the endpoint: it is given back as soon as the
	// answer is in, not after the history write and the deletion that follow.
	defer release()
	secret, err := engine.SigningSecret(ctx, r.Client, r.APIReader, ep)
	if err != nil {
		return ctrl.Result{}, err
	}
	if secret == "" {
		// A just-created endpoint whose secret the controller has not written yet.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	id, err := uuid.Parse(d.Spec.EventID)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, d, st, "invalid event id")
	}
	ev, recorded, err := r.Store.EventForDelivery(ctx, id, d.Name)
	switch {
	case recorded:
		// Written to the history already (the manager stopped before deleting it): remove it.
		return ctrl.Result{}, r.remove(ctx, d, st)
	case errors.Is(err, store.ErrNotFound):
		return ctrl.Result{}, r.fail(ctx, d, st, "the event no longer exists")
	case err != nil:
		return ctrl.Result{}, err
	}

	// An endpoint with a rate limit: a turn due soon is waited for; a later one gives the
	// worker and the slot back until then (it is not an attempt, nor a failure).
	if later, err := r.Engine.Throttle.TakeTurn(ctx, ep, throttleWaitInline); err != nil || later > 0 {
		return ctrl.Result{RequeueAfter: later}, err
	}
	out := r.Engine.Attempt(ctx, release, engine.AttemptRequest{Endpoint: ep, Secret: secret, DeliveryName: d.Name,
		EventID: d.Spec.EventID, EventType: string(d.Spec.EventType), Body: ev.Body})
	switch {
	case out.Stopped:
		// The manager is stopping: the attempt is not counted; the next manager makes it.
		return ctrl.Result{}, ctx.Err()
	case out.EndpointRemoved:
		return ctrl.Result{}, r.cancel(ctx, d, st, switchboardv1alpha1.ReasonEndpointNotFound, "The endpoint was removed during the attempt")
	}
	if out.Result.OK {
		metrics.WebhookEventSucceeded(r.Clock.Since(ev.CreatedAt))
	}
	return r.recordAttempt(ctx, d, ep, st, out.SentAt, out.Result)
}

// recordAttempt counts an attempt and decides what follows it.
func (r *WebhookDeliveryReconciler) recordAttempt(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, ep *switchboardv1alpha1.WebhookEndpoint,
	st *deliveryState, sentAt time.Time, res send.Result) (ctrl.Result, error) {
	d.Status.Attempts++
	d.Status.LastAttemptAt = &metav1.Time{Time: sentAt}
	d.Status.LastResponseCode = int32(res.StatusCode)
	d.Status.LastError = engine.Truncate(res.Error, engine.MaxErrorLen)
	d.Status.NextAttemptAt = nil
	if res.OK {
		d.Status.Phase = switchboardv1alpha1.WebhookDeliveryPhaseSucceeded
		engine.SetDeliveryConditions(d, switchboardv1alpha1.ReasonSucceeded, fmt.Sprintf("The endpoint answered %d", res.StatusCode))
		return ctrl.Result{}, r.finish(ctx, d, st)
	}
	next, ok := send.NextAttempt(int(d.Status.Attempts), sentAt)
	if !ok {
		d.Status.Phase = switchboardv1alpha1.WebhookDeliveryPhaseFailed
		engine.SetDeliveryConditions(d, switchboardv1alpha1.ReasonRetriesExhausted, "The last retry failed: "+d.Status.LastError)
		if r.Recorder != nil {
			r.Recorder.Eventf(ep, d, corev1.EventTypeWarning, "DeliveryFailed", "Deliver",
				"Event %s (%s) failed after %d attempts; last error: %s", d.Spec.EventID, d.Spec.EventType, d.Status.Attempts, d.Status.LastError)
		}
		return ctrl.Result{}, r.finish(ctx, d, st)
	}
	d.Status.Phase = switchboardv1alpha1.WebhookDeliveryPhaseRetrying
	d.Status.NextAttemptAt = &metav1.Time{Time: next}
	engine.SetDeliveryConditions(d, switchboardv1alpha1.ReasonRetryScheduled, "Attempt failed ("+d.Status.LastError+"); retry at "+next.UTC().Format(time.RFC3339))
	return ctrl.Result{RequeueAfter: capWait(next.Sub(r.Clock.Now()), r.MaxRequeue)}, nil
}

// cancel ends a delivery as cancelled (resendable).
func (r *WebhookDeliveryReconciler) cancel(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, st *deliveryState, reason, msg string) error {
	d.Status.Phase = switchboardv1alpha1.WebhookDeliveryPhaseCancelled
	d.Status.NextAttemptAt = nil
	engine.SetDeliveryConditions(d, reason, msg)
	return r.finish(ctx, d, st)
}

// fail ends a delivery as failed without an attempt (its event is gone).
func (r *WebhookDeliveryReconciler) fail(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, st *deliveryState, msg string) error {
	d.Status.Phase = switchboardv1alpha1.WebhookDeliveryPhaseFailed
	d.Status.LastError = msg
	d.Status.NextAttemptAt = nil
	engine.SetDeliveryConditions(d, switchboardv1alpha1.ReasonRetriesExhausted, msg)
	return r.finish(ctx, d, st)
}

// finish writes a finished delivery to the history, then removes its resource. The status
// is not written to the API server first: the history row is the record, which keeps a
// successful delivery at two writes (create and delete).
func (r *WebhookDeliveryReconciler) finish(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, st *deliveryState) error {
	id, _ := uuid.Parse(d.Spec.EventID)
	err := r.Engine.Finish(ctx, store.FinishedDelivery{
		AccountPublicID: d.Spec.AccountID, EndpointPublicID: d.Spec.EndpointName, DeliveryName: d.Name, EventID: id,
		EventType: string(d.Spec.EventType), Attempts: int(d.Status.Attempts), ResponseCode: int(d.Status.LastResponseCode),
		LastError: d.Status.LastError, CreatedAt: d.CreationTimestamp.Time,
	}, d.Status.Phase)
	if err != nil {
		return err
	}
	return r.remove(ctx, d, st)
}

func (r *WebhookDeliveryReconciler) remove(ctx context.Context, d *switchboardv1alpha1.WebhookDelivery, st *deliveryState) error {
	err := r.Delete(ctx, d, client.Preconditions{UID: &d.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	r.Engine.Removed.Add(d.UID)
	st.removed = true
	return nil
}

// endpoint reads the delivery's endpoint; nil when it does not exist (checked past the
// cache before concluding so).
func (r *WebhookDeliveryReconciler) endpoint(ctx context.Context, key types.NamespacedName) (*switchboardv1alpha1.WebhookEndpoint, error) {
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	err := r.Get(ctx, key, ep)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, ep)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ep, nil
}
