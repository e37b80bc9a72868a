/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package v1alpha1 contains the custom resources of the switchboard.dev v1alpha1 API group:
// WebhookEndpoint, WebhookDelivery and TranscriptionJob.
// +kubebuilder:object:generate=true
// +groupName=switchboard.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "switchboard.dev", Version: "v1alpha1"}

	// SchemeBuilder adds the kinds of this package to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this package (and the meta/v1 options
// types every group needs) under GroupVersion.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&WebhookEndpoint{}, &WebhookEndpointList{},
		&WebhookDelivery{}, &WebhookDeliveryList{},
		&TranscriptionJob{}, &TranscriptionJobList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
