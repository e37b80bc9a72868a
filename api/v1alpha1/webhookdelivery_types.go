/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookDeliveryPhase is the lifecycle state of a delivery.
// +kubebuilder:validation:Enum=Pending;Retrying;Succeeded;Failed;Cancelled
type WebhookDeliveryPhase string

const (
	// WebhookDeliveryPhasePending: the first attempt has not been made yet.
	WebhookDeliveryPhasePending WebhookDeliveryPhase = "Pending"
	// WebhookDeliveryPhaseRetrying: an attempt failed; the next one is at status.nextAttemptAt.
	WebhookDeliveryPhaseRetrying WebhookDeliveryPhase = "Retrying"
	// WebhookDeliveryPhaseSucceeded: the endpoint answered 2xx within 10 seconds.
	WebhookDeliveryPhaseSucceeded WebhookDeliveryPhase = "Succeeded"
	// WebhookDeliveryPhaseFailed: the last retry failed (API status "failed").
	WebhookDeliveryPhaseFailed WebhookDeliveryPhase = "Failed"
	// WebhookDeliveryPhaseCancelled: delivery stopped before success (endpoint paused,
	// switched off or removed).
	WebhookDeliveryPhaseCancelled WebhookDeliveryPhase = "Cancelled"
)

// Condition types and reasons of a WebhookDelivery. Ready is True once it succeeded.
const (
	// ConditionDelivered: the endpoint acknowledged the event with a 2xx answer.
	ConditionDelivered = "Delivered"

	ReasonSucceeded         = "Succeeded"
	ReasonAttemptPending    = "AttemptPending"
	ReasonRetryScheduled    = "RetryScheduled"
	ReasonRetriesExhausted  = "RetriesExhausted"
	ReasonCancelled         = "Cancelled"
	ReasonEndpointNotFound  = "EndpointNotFound"
	ReasonEndpointNotActive = "EndpointNotActive"
)

// WebhookDeliverySpec is one event to post to one endpoint. It cannot change once created:
// a resend is a new WebhookDelivery with the same eventID and resendOf set.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new WebhookDelivery (with resendOf) instead"
type WebhookDeliverySpec struct {
	// AccountID is the public_id of the account the event belongs to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	AccountID string `json:"accountID"`

	// EndpointName is the name of the WebhookEndpoint, in the same namespace, to post to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="endpointName must be the name of a WebhookEndpoint (lower-case letters, digits, '-' and '.')"
	EndpointName string `json:"endpointName"`

	// EventID is the event's UUID (the X-Service-Delivery header and payload id); it is the
	// same on every retry and resend.
	// +required
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",message="eventID must be a lower-case UUID such as 3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1f34"
	EventID string `json:"eventID"`

	// EventType is call.ended, voicemail.received, transcript.ready or test.
	// +required
	// +kubebuilder:validation:Enum=call.ended;voicemail.received;transcript.ready;test
	EventType WebhookEventType `json:"eventType"`

	// ResendOf is the name of the failed or cancelled WebhookDelivery this one sends again.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ResendOf string `json:"resendOf,omitempty"`
}

// WebhookDeliveryStatus is the progress of a delivery.
type WebhookDeliveryStatus struct {
	// Phase is Pending, Retrying, Succeeded, Failed or Cancelled.
	// +optional
	Phase WebhookDeliveryPhase `json:"phase,omitempty"`

	// Attempts is how many attempts were sent (at most 6: the first and five retries).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts,omitempty"`

	// NextAttemptAt is when the next attempt is due (API next_attempt_at); unset when none is.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`

	// LastAttemptAt is when the last attempt was sent.
	// +optional
	LastAttemptAt *metav1.Time `json:"lastAttemptAt,omitempty"`

	// LastResponseCode is the HTTP status of the last attempt (0 when no response arrived).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=599
	LastResponseCode int32 `json:"lastResponseCode,omitempty"`

	// LastError describes why the last attempt failed (API last_error).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastError string `json:"lastError,omitempty"`

	// Conditions: Ready, Delivered.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// WebhookDelivery is one signed event posted (and retried) to one WebhookEndpoint.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=whdl,categories=switchboard
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpointName`
// +kubebuilder:printcolumn:name="Event",type=string,JSONPath=`.spec.eventType`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Next Attempt",type=string,JSONPath=`.status.nextAttemptAt`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Event ID",type=string,JSONPath=`.spec.eventID`,priority=1
// +kubebuilder:printcolumn:name="Last Code",type=integer,JSONPath=`.status.lastResponseCode`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebhookDelivery struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebhookDeliverySpec `json:"spec"`
	// +optional
	Status WebhookDeliveryStatus `json:"status,omitempty"`
}

// WebhookDeliveryList is a list of WebhookDelivery.
// +kubebuilder:object:root=true
type WebhookDeliveryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebhookDelivery `json:"items"`
}
