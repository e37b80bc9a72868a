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
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// reconcileSigningSecret makes sure the endpoint has a signing secret. An endpoint created
// without spec.signingSecretRef (kubectl apply) gets a generated one in the Secret
// "<name>-signing", owned by the endpoint; the owner reads it once by rotating it through the
// API. The spec is left as the user wrote it.
func (r *WebhookEndpointReconciler) reconcileSigningSecret(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) (ctrl.Result, error) {
	name := send.SigningSecretName(ep)
	sec, err := r.secret(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: name})
	if ep.Spec.SigningSecretRef == nil {
		switch {
		case apierrors.IsNotFound(err):
			sec = send.NewSigningSecret(ep, name, send.NewSecret())
			if err = r.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, fmt.Errorf("create signing secret: %w", err)
			}
			r.event(ep, corev1.EventTypeNormal, "SigningSecretGenerated", "GenerateSigningSecret", "Generated a signing secret in Secret "+name)
			if apierrors.IsAlreadyExists(err) {
				sec, err = r.secret(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: name})
			}
		case err == nil && !metav1.IsControlledBy(sec, ep):
			setSecretCondition(ep, false, fmt.Sprintf("Secret %s exists and does not belong to this endpoint; set spec.signingSecretRef", name))
			return ctrl.Result{}, nil
		}
	}
	if apierrors.IsNotFound(err) || (err == nil && len(sec.Data[switchboardv1alpha1.SigningSecretKey]) == 0) {
		setSecretCondition(ep, false, "Secret "+name+" is missing or has no \"secret\" key")
		// The Secret watch brings us back when it appears; look again in a while anyway.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if sec.Labels[send.LabelSigningSecret] != "true" {
		setSecretCondition(ep, true, fmt.Sprintf("The signing secret is in Secret %s, which lacks the label %s=true: "+
			"every delivery attempt reads it from the API server; label it to have it cached", sec.Name, send.LabelSigningSecret))
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

// reconcilePhase derives the phase from the owner's intent and the failure record: SwitchedOff
// while a switch-off is in force (send.SwitchedOff), Paused when spec.paused, Active
// otherwise. An endpoint the owner set active after a switch-off gets a clean failure record
// in the same reconcile; an active endpoint that has failed for 24 hours is switched off. Only
// status is written: the spec stays the owner's.
func (r *WebhookEndpointReconciler) reconcilePhase(ep *switchboardv1alpha1.WebhookEndpoint) {
	now := r.Clock.Now()
	switchedOff := send.SwitchedOff(ep)
	if !switchedOff && ep.Status.SwitchedOffAt != nil {
		ep.Status.SwitchedOffAt, ep.Status.OwnersNotifiedAt, ep.Status.FailingSince = nil, nil, nil
		r.event(ep, corev1.EventTypeNormal, "SwitchedOn", "SwitchOn", "Set active again after being switched off")
	}
	switch {
	case switchedOff:
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
		if ep.Status.SwitchedOffAt == nil { // switched off by an earlier release
			ep.Status.SwitchedOffAt = &metav1.Time{Time: now}
			if t, err := time.Parse(time.RFC3339, ep.Annotations[send.AnnotationSwitchedOff]); err == nil {
				ep.Status.SwitchedOffAt = &metav1.Time{Time: t}
			}
		}
	case ep.Spec.Paused:
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhasePaused
	default:
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseActive
		if ep.Status.FailingSince != nil && send.ShouldSwitchOff(&ep.Status.FailingSince.Time, now) {
			ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
			ep.Status.SwitchedOffAt = &metav1.Time{Time: send.SwitchOffTime(ep, now)}
			metrics.WebhookEndpointSwitchedOff()
			r.event(ep, corev1.EventTypeWarning, "SwitchedOff", "SwitchOff", "Deliveries failed continuously for 24 hours; switched off")
		}
	}
	setPhaseConditions(ep)
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
	subject, body := send.SwitchOffMessage(acct.Name, ep.Spec.DisplayName, ep.Spec.URL, failingSince)
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
	wait := send.SwitchOffAt(ep.Status.FailingSince.Time).Sub(r.Clock.Now())
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
