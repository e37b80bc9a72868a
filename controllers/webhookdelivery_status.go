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
)

// patchDeliveryStatus stamps observedGeneration and writes the status when the reconcile
// decided something. observedGeneration alone does not count: a delivery parked or waiting
// for its retry (a new one included) costs the API server nothing.
func (r *WebhookDeliveryReconciler) patchDeliveryStatus(ctx context.Context, base, d *switchboardv1alpha1.WebhookDelivery) error {
	d.Status.ObservedGeneration = d.Generation
	return patchStatus(ctx, r.Client, base, d, func(d *switchboardv1alpha1.WebhookDelivery) any {
		s := d.Status
		s.ObservedGeneration = 0
		return s
	})
}

// setDeliveryConditions sets Ready and Delivered from the phase.
func setDeliveryConditions(d *switchboardv1alpha1.WebhookDelivery, reason, msg string) {
	status := metav1.ConditionFalse
	if d.Status.Phase == switchboardv1alpha1.WebhookDeliveryPhaseSucceeded {
		status = metav1.ConditionTrue
	}
	for _, t := range []string{switchboardv1alpha1.ConditionReady, switchboardv1alpha1.ConditionDelivered} {
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: d.Generation})
	}
}
