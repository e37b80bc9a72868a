/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// patchDeliveryStatus stamps observedGeneration when the reconcile succeeded and writes the status when the reconcile
// decided something. observedGeneration alone does not count: a delivery parked or waiting
// for its retry (a new one included) costs the API server nothing.
func (r *WebhookDeliveryReconciler) patchDeliveryStatus(ctx context.Context, base, d *switchboardv1alpha1.WebhookDelivery, succeeded bool) error {
	if succeeded {
		d.Status.ObservedGeneration = d.Generation
	}
	return patchStatus(ctx, r.Client, base, d, func(d *switchboardv1alpha1.WebhookDelivery) any {
		s := d.Status
		s.ObservedGeneration = 0
		return s
	})
}
