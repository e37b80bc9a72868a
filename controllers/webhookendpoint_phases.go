/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// reconcileSigningSecret makes sure the endpoint has a signing secret. An endpoint created
// without spec.signingSecretRef (kubectl apply) gets a generated one in a Secret it owns;
// the owner reads it once by rotating it through the API.
func (r *WebhookEndpointReconciler) reconcileSigningSecret(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) (ctrl.Result, error) {
	if ep.Spec.SigningSecretRef == nil {
		name := webhooks.SecretName(ep.Name)
		sec, err := r.secret(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: name})
		switch {
		case apierrors.IsNotFound(err):
			sec = webhooks.NewSigningSecret(ep, name, webhooks.NewSecret())
			if err := r.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, fmt.Errorf("create signing secret: %w", err)
			}
		case err != nil:
			return ctrl.Result{}, err
		case !metav1.IsControlledBy(sec, ep):
			setSecretCondition(ep, false, fmt.Sprintf("Secret %s exists and does not belong to this endpoint; set spec.signingSecretRef", name))
			return ctrl.Result{}, nil
		}
		specBase := ep.DeepCopy()
		ep.Spec.SigningSecretRef = &switchboardv1alpha1.LocalSecretReference{Name: name}
		status := ep.Status
		if err := r.Patch(ctx, ep, client.MergeFrom(specBase)); err != nil {
			return ctrl.Result{}, fmt.Errorf("set spec.signingSecretRef: %w", err)
		}
		ep.Status = status
		r.event(ep, corev1.EventTypeNormal, "SigningSecretGenerated", "GenerateSigningSecret", "Generated a signing secret in Secret "+name)
	}
	sec, err := r.secret(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: ep.Spec.SigningSecretRef.Name})
	if apierrors.IsNotFound(err) || (err == nil && len(sec.Data[switchboardv1alpha1.SigningSecretKey]) == 0) {
		setSecretCondition(ep, false, "Secret "+ep.Spec.SigningSecretRef.Name+" is missing or has no \"secret\" key")
		// The Secret watch brings us back when it appears; look again in a while anyway.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if sec.Labels[webhooks.LabelSigningSecret] != "true" {
		setSecretCondition(ep, true, fmt.Sprintf("The signing secret is in Secret %s, which lacks the label %s=true: "+
			"every delivery attempt reads it from the API server; label it to have it cached", sec.Name, webhooks.LabelSigningSecret))
		return ctrl.Result{}, nil
	}
	setSecretCondition(ep, true, "")
	return ctrl.Result{}, nil
}

// secret reads a Secret from the cache, or past it when the cache does not hold it (a
// Secret without the signing-secret label, see CacheOptions).
func (r *WebhookEndpointReconciler) secret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	err := r.Get(ctx, key, sec)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, sec)
	}
	return sec, err
}

// reconcilePhase derives the phase: SwitchedOff when spec.paused carries the switched-off
// annotation, Paused when spec.paused alone, Active otherwise. Setting paused back to false
// switches a switched-off endpoint on with a clean failure record (status first, then the
// annotation goes, so a stale read never sees the annotation gone and the old record). An
// active endpoint that has failed for 24 hours is switched off here.
func (r *WebhookEndpointReconciler) reconcilePhase(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) (ctrl.Result, error) {
	now := r.Clock.Now()
	switch {
	case webhooks.SwitchedOff(ep):
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
		if ep.Status.SwitchedOffAt == nil {
			ep.Status.SwitchedOffAt = &metav1.Time{Time: now}
			if t, err := time.Parse(time.RFC3339, ep.Annotations[webhooks.AnnotationSwitchedOff]); err == nil {
				ep.Status.SwitchedOffAt = &metav1.Time{Time: t}
			}
		}
	case ep.Spec.Paused:
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhasePaused
	case ep.Annotations[webhooks.AnnotationSwitchedOff] != "":
		// Set active after a switch-off.
		if ep.Status.SwitchedOffAt != nil || ep.Status.OwnersNotifiedAt != nil || ep.Status.FailingSince != nil ||
			ep.Status.Phase != switchboardv1alpha1.WebhookEndpointPhaseActive {
			ep.Status.SwitchedOffAt, ep.Status.OwnersNotifiedAt, ep.Status.FailingSince = nil, nil, nil
			ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseActive
			r.event(ep, corev1.EventTypeNormal, "SwitchedOn", "SwitchOn", "Set active again after being switched off")
			setPhaseConditions(ep)
			return ctrl.Result{RequeueAfter: time.Millisecond}, nil // the annotation goes next time
		}
		metaBase := ep.DeepCopy()
		status := ep.Status
		delete(ep.Annotations, webhooks.AnnotationSwitchedOff)
		if err := r.Patch(ctx, ep, client.MergeFrom(metaBase)); err != nil {
			return ctrl.Result{}, fmt.Errorf("remove switched-off mark: %w", err)
		}
		ep.Status = status
	default:
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseActive
		if ep.Status.FailingSince != nil && webhooks.ShouldSwitchOff(&ep.Status.FailingSince.Time, now) {
			if err := r.switchOff(ctx, ep, now); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	setPhaseConditions(ep)
	return ctrl.Result{}, nil
}

// switchOff pauses the endpoint and marks it switched off in one write (spec.paused and the
// annotation), so kubectl and the API show it paused; the status follows.
func (r *WebhookEndpointReconciler) switchOff(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint, now time.Time) error {
	status := ep.Status
	specBase := ep.DeepCopy()
	ep.Spec.Paused = true
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	ep.Annotations[webhooks.AnnotationSwitchedOff] = now.UTC().Format(time.RFC3339)
	if err := r.Patch(ctx, ep, client.MergeFrom(specBase)); err != nil {
		return fmt.Errorf("pause switched-off endpoint: %w", err)
	}
	metrics.WebhookEndpointSwitchedOff()
	ep.Status = status
	ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
	ep.Status.SwitchedOffAt = &metav1.Time{Time: now}
	r.event(ep, corev1.EventTypeWarning, "SwitchedOff", "SwitchOff", "Deliveries failed continuously for 24 hours; switched off")
	return nil
}

// reconcileOwnersNotice emails the owners once per switch-off. The claim row in PostgreSQL
// is taken before sending, so a restarted manager or a second replica never sends again.
func (r *WebhookEndpointReconciler) reconcileOwnersNotice(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) error {
	if ep.Status.Phase != switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff || ep.Status.OwnersNotifiedAt != nil {
		return nil
	}
	now := r.Clock.Now()
	failingSince := now
	if ep.Status.FailingSince != nil {
		failingSince = ep.Status.FailingSince.Time
	} else if ep.Status.SwitchedOffAt != nil {
		failingSince = ep.Status.SwitchedOffAt.Time
	}
	claimed, err := r.Store.ClaimSwitchOffNotice(ctx, ep.Spec.AccountID, string(ep.UID), ep.Name, failingSince, now)
	if err != nil {
		return err
	}
	if claimed {
		if err := r.sendSwitchOffNotice(ctx, ep, failingSince); err != nil {
			if rerr := r.Store.ReleaseSwitchOffNotice(context.WithoutCancel(ctx), string(ep.UID), failingSince); rerr != nil {
				return fmt.Errorf("%w (and releasing the claim: %v)", err, rerr)
			}
			return err
		}
		r.event(ep, corev1.EventTypeNormal, "OwnersNotified", "NotifyOwners", "Emailed the account owners about the switch-off")
	}
	ep.Status.OwnersNotifiedAt = &metav1.Time{Time: now}
	return nil
}

func (r *WebhookEndpointReconciler) sendSwitchOffNotice(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint, failingSince time.Time) error {
	acct, err := r.Store.GetAccountByPublicID(ctx, ep.Spec.AccountID)
	if err != nil {
		if err == store.ErrNotFound {
			return nil // the account is gone: nobody to tell
		}
		return err
	}
	owners, err := r.Store.AccountOwners(ctx, acct.ID)
	if err != nil {
		return err
	}
	to := make([]string, 0, len(owners))
	for _, o := range owners {
		to = append(to, o.Email)
	}
	if len(to) == 0 || r.Mailer == nil {
		return nil
	}
	subject, body := webhooks.SwitchOffMessage(acct.Name, ep.Spec.DisplayName, ep.Spec.URL, failingSince)
	if err := r.Mailer.Send(ctx, to, subject, body); err != nil {
		return fmt.Errorf("email owners about switch-off: %w", err)
	}
	return nil
}

// switchOffTimer brings an active, failing endpoint back when its 24 hours are up.
func (r *WebhookEndpointReconciler) switchOffTimer(ep *switchboardv1alpha1.WebhookEndpoint) ctrl.Result {
	if ep.Status.Phase != switchboardv1alpha1.WebhookEndpointPhaseActive || ep.Status.FailingSince == nil {
		return ctrl.Result{}
	}
	wait := webhooks.SwitchOffAt(ep.Status.FailingSince.Time).Sub(r.Clock.Now())
	return ctrl.Result{RequeueAfter: capWait(wait, r.MaxRequeue)}
}

// capWait bounds a timer by max (when set) and keeps it positive.
func capWait(d, max time.Duration) time.Duration {
	if max > 0 && d > max {
		d = max
	}
	if d <= 0 {
		d = time.Millisecond
	}
	return d
}

func (r *WebhookEndpointReconciler) event(obj client.Object, typ, reason, action, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, typ, reason, action, "%s", msg)
	}
}
