/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// CacheOptions is the manager's cache: Secrets only when labelled as webhook signing
// secrets (the ones the service writes carry the label), so the manager neither holds
// every Secret of the cluster in memory nor sees the others through its cache. A signing
// secret an operator made without the label is read past the cache (APIReader). Objects are
// cached without their managedFields, which nothing here reads and which are a large part of
// a small object: with tens of thousands of endpoints and Secrets, a replica's memory.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{send.LabelSigningSecret: "true"})},
	}}
}
