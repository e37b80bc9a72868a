/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sbv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// patchStatus writes the status through the status subresource when it changed.
func (r *WebhookEndpointReconciler) patchStatus(ctx context.Context, base, ep *sbv1.WebhookEndpoint) error {
	ep.Status.ObservedGeneration = ep.Generation
	if reflect.DeepEqual(base.Status, ep.Status) {
		return nil
	}
	return r.Status().Patch(ctx, ep, client.MergeFrom(base))
}

func setSecretCondition(ep *sbv1.WebhookEndpoint, ok bool, msg string) {
	c := metav1.Condition{Type: sbv1.ConditionSigningSecretReady, Status: metav1.ConditionTrue, Reason: sbv1.ReasonSigningSecretFound,
		Message: "The signing secret is in Secret " + secretRefName(ep), ObservedGeneration: ep.Generation}
	if ok && msg != "" {
		c.Message = msg
	}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sbv1.ReasonSigningSecretMissing, msg
		meta.SetStatusCondition(&ep.Status.Conditions, metav1.Condition{Type: sbv1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: sbv1.ReasonSigningSecretMissing, Message: msg, ObservedGeneration: ep.Generation})
	}
	meta.SetStatusCondition(&ep.Status.Conditions, c)
}

func secretRefName(ep *sbv1.WebhookEndpoint) string {
	if ep.Spec.SigningSecretRef == nil {
		return ""
	}
	return ep.Spec.SigningSecretRef.Name
}

// setPhaseConditions sets Ready and Failing from the phase and failingSince.
func setPhaseConditions(ep *sbv1.WebhookEndpoint) {
	ready := metav1.Condition{Type: sbv1.ConditionReady, ObservedGeneration: ep.Generation}
	switch ep.Status.Phase {
	case sbv1.WebhookEndpointPhaseActive:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, sbv1.ReasonActive, "Deliveries are sent"
	case sbv1.WebhookEndpointPhasePaused:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, sbv1.ReasonPaused, "Paused: events are not delivered"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, sbv1.ReasonSwitchedOff,
			"Switched off after 24 hours of failed deliveries; set spec.paused=false (API status active) to switch it on"
	}
	meta.SetStatusCondition(&ep.Status.Conditions, ready)
	failing := metav1.Condition{Type: sbv1.ConditionFailing, Status: metav1.ConditionFalse, Reason: sbv1.ReasonDeliveriesHealthy,
		Message: "The last delivery attempt succeeded or none failed", ObservedGeneration: ep.Generation}
	if ep.Status.FailingSince != nil {
		failing.Status, failing.Reason = metav1.ConditionTrue, sbv1.ReasonDeliveriesFailing
		failing.Message = "Every attempt since " + ep.Status.FailingSince.UTC().Format("2006-01-02T15:04:05Z") + " failed"
	}
	meta.SetStatusCondition(&ep.Status.Conditions, failing)
}
