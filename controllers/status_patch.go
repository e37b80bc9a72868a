/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchStatus is the one way the reconcilers write status: a merge patch from base through
// the status subresource, sent only when status(obj) differs semantically from status(base),
// so a reconcile that decided nothing costs the API server nothing. Callers stamp
// observedGeneration before the call; opts add e.g. the optimistic lock.
func patchStatus[T client.Object](ctx context.Context, c client.Client, base, obj T, status func(T) any, opts ...client.MergeFromOption) error {
	if equality.Semantic.DeepEqual(status(base), status(obj)) {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, opts...))
}
