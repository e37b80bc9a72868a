/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// patchEndpointStatus stamps observedGeneration when the reconcile succeeded and writes the
// status when it changed (a new
// generation alone counts, so observedGeneration follows every spec change).
func (r *WebhookEndpointReconciler) patchEndpointStatus(ctx context.Context, base, ep *switchboardv1alpha1.WebhookEndpoint, succeeded bool) error {
	if succeeded {
		ep.Status.ObservedGeneration = ep.Generation
	}
	return patchStatus(ctx, r.Client, base, ep, func(ep *switchboardv1alpha1.WebhookEndpoint) any { return ep.Status })
}

func setSecretCondition(ep *switchboardv1alpha1.WebhookEndpoint, ok bool, msg string) {
	c := metav1.Condition{Type: switchboardv1alpha1.ConditionSigningSecretReady, Status: metav1.ConditionTrue, Reason: switchboardv1alpha1.ReasonSigningSecretFound,
		Message: "The signing secret is in Secret " + send.SigningSecretName(ep), ObservedGeneration: ep.Generation}
	if ok && msg != "" {
		c.Message = msg
	}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, switchboardv1alpha1.ReasonSigningSecretMissing, msg
		meta.SetStatusCondition(&ep.Status.Conditions, metav1.Condition{Type: switchboardv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: switchboardv1alpha1.ReasonSigningSecretMissing, Message: msg, ObservedGeneration: ep.Generation})
	}
	meta.SetStatusCondition(&ep.Status.Conditions, c)
}

// setPhaseConditions sets Ready and Failing from the phase and failingSince.
func setPhaseConditions(ep *switchboardv1alpha1.WebhookEndpoint) {
	ready := metav1.Condition{Type: switchboardv1alpha1.ConditionReady, ObservedGeneration: ep.Generation}
	switch ep.Status.Phase {
	case switchboardv1alpha1.WebhookEndpointPhaseActive:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, switchboardv1alpha1.ReasonActive, "Deliveries are sent"
	case switchboardv1alpha1.WebhookEndpointPhasePaused:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, switchboardv1alpha1.ReasonPaused, "Paused: events are not delivered"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, switchboardv1alpha1.ReasonSwitchedOff,
			"Switched off after 24 hours of failed deliveries; set it active through the API (status active) or set spec.activatedAt to now to switch it on"
	}
	meta.SetStatusCondition(&ep.Status.Conditions, ready)
	failing := metav1.Condition{Type: switchboardv1alpha1.ConditionFailing, Status: metav1.ConditionFalse, Reason: switchboardv1alpha1.ReasonDeliveriesHealthy,
		Message: "The last delivery attempt succeeded or none failed", ObservedGeneration: ep.Generation}
	if ep.Status.FailingSince != nil {
		failing.Status, failing.Reason = metav1.ConditionTrue, switchboardv1alpha1.ReasonDeliveriesFailing
		failing.Message = "Every attempt since " + ep.Status.FailingSince.UTC().Format("2006-01-02T15:04:05Z") + " failed"
	}
	meta.SetStatusCondition(&ep.Status.Conditions, failing)
}
