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
func (r *WebhookDeliveryReconciler) patchStatus(ctx context.Context, base, d *sbv1.WebhookDelivery) error {
	if reflect.DeepEqual(base.Status, d.Status) {
		// Nothing decided (a delivery parked or waiting for its retry): no write, so waiting
		// costs the API server nothing.
		return nil
	}
	d.Status.ObservedGeneration = d.Generation
	return r.Status().Patch(ctx, d, client.MergeFrom(base))
}

// setDeliveryConditions sets Ready and Delivered from the phase.
func setDeliveryConditions(d *sbv1.WebhookDelivery, reason, msg string) {
	status := metav1.ConditionFalse
	if d.Status.Phase == sbv1.WebhookDeliveryPhaseSucceeded {
		status = metav1.ConditionTrue
	}
	for _, t := range []string{sbv1.ConditionReady, sbv1.ConditionDelivered} {
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: d.Generation})
	}
}
