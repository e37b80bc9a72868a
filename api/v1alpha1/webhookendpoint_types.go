/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookEventType names a webhook event (the X-Service-Event header and the payload's event).
type WebhookEventType string

const (
	// EventCallEnded is sent when any call ends, except blocked and emergency calls.
	EventCallEnded WebhookEventType = "call.ended"
	// EventVoicemailReceived is sent once per delivered voicemail.
	EventVoicemailReceived WebhookEventType = "voicemail.received"
	// EventTranscriptReady is sent once per recorded call when its transcript (and summary) exist.
	EventTranscriptReady WebhookEventType = "transcript.ready"
	// EventTest is a test event; endpoints cannot subscribe to it, it is only sent on request.
	EventTest WebhookEventType = "test"
)

// SubscribableEvents are the events an endpoint may list in spec.events.
var SubscribableEvents = []WebhookEventType{EventCallEnded, EventVoicemailReceived, EventTranscriptReady}

// SigningSecretKey is the key of the Secret data that holds an endpoint's signing secret
// (a value starting "whsec_").
const SigningSecretKey = "secret"

// MaxWebhookEndpointsPerAccount is the spec's limit of endpoints per account.
const MaxWebhookEndpointsPerAccount = 5

// WebhookEndpointPhase is the lifecycle state of an endpoint.
// +kubebuilder:validation:Enum=Active;Paused;SwitchedOff
type WebhookEndpointPhase string

const (
	// WebhookEndpointPhaseActive: deliveries are sent (API status "active").
	WebhookEndpointPhaseActive WebhookEndpointPhase = "Active"
	// WebhookEndpointPhasePaused: spec.paused is set (API status "paused").
	WebhookEndpointPhasePaused WebhookEndpointPhase = "Paused"
	// WebhookEndpointPhaseSwitchedOff: it failed continuously for 24 hours; no deliveries are
	// sent until the owner sets it active again (spec.activatedAt).
	WebhookEndpointPhaseSwitchedOff WebhookEndpointPhase = "SwitchedOff"
)

// Condition types and reasons of a WebhookEndpoint (besides ConditionReady).
const (
	// ConditionSigningSecretReady: the Secret named by spec.signingSecretRef exists and
	// holds a non-empty "secret" key.
	ConditionSigningSecretReady = "SigningSecretReady"
	// ConditionFailing: True while every delivery attempt since status.failingSince failed.
	ConditionFailing = "Failing"

	ReasonActive               = "Active"
	ReasonPaused               = "Paused"
	ReasonSwitchedOff          = "SwitchedOff"
	ReasonSigningSecretFound   = "SigningSecretFound"
	ReasonSigningSecretMissing = "SigningSecretMissing"
	ReasonDeliveriesFailing    = "DeliveriesFailing"
	ReasonDeliveriesHealthy    = "DeliveriesHealthy"
)

// LocalSecretReference names a Secret in the same namespace as the object that refers to it.
type LocalSecretReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="name must be a valid Secret name (lower-case letters, digits, '-' and '.')"
	Name string `json:"name"`
}

// WebhookEndpointSpec is an HTTPS address the account wants signed events posted to.
type WebhookEndpointSpec struct {
	// AccountID is the public_id of the account that owns the endpoint. It cannot change.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="accountID is immutable"
	AccountID string `json:"accountID"`

	// DisplayName is the endpoint's name in the API (the `name` field).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	DisplayName string `json:"displayName"`

	// URL is the https:// address deliveries are posted to. Redirects are not followed.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="url must start with https://"
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getHostname() != ''",message="url must be an absolute URL with a host name, such as https://example.com/hooks"
	URL string `json:"url"`

	// Events are the events the endpoint receives: call.ended, voicemail.received,
	// transcript.ready (test events are sent on request whatever this holds).
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum=call.ended;voicemail.received;transcript.ready
	Events []WebhookEventType `json:"events"`

	// Paused stops deliveries (API status "paused"). Only the owner sets it: a switch-off for
	// failing is recorded in status (phase SwitchedOff), not here.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ActivatedAt is when the owner last set the endpoint active after it was switched off
	// (the API's PATCH with status "active" sets it). A switch-off recorded in
	// status.switchedOffAt before this time is over: deliveries resume and the controller
	// clears the failure record. The controller never sets it.
	// +optional
	ActivatedAt *metav1.Time `json:"activatedAt,omitempty"`

	// RateLimit caps the deliveries sent to the endpoint per second, across every replica
	// (API rate_limit); unset: no cap beyond the per-endpoint concurrency bound. Deliveries
	// held back by it wait: they are not failures.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	RateLimit *int32 `json:"rateLimit,omitempty"`

	// SigningSecretRef names a Secret in this namespace whose key "secret" holds the signing
	// secret (whsec_...). When empty the secret is in the Secret "<name>-signing", which the
	// controller generates (owned by the endpoint) when it is missing.
	// The secret value itself is never stored in the spec or status.
	// +optional
	SigningSecretRef *LocalSecretReference `json:"signingSecretRef,omitempty"`
}

// WebhookEndpointStatus is what the controller observed about an endpoint.
type WebhookEndpointStatus struct {
	// Phase is Active, Paused or SwitchedOff.
	// +optional
	Phase WebhookEndpointPhase `json:"phase,omitempty"`

	// FailingSince is when the current run of failed deliveries began (API failing_since);
	// unset while deliveries succeed.
	// +optional
	FailingSince *metav1.Time `json:"failingSince,omitempty"`

	// SwitchedOffAt is when the endpoint was switched off after 24 hours of failure. The
	// switch-off is in force until spec.activatedAt is at or after it.
	// +optional
	SwitchedOffAt *metav1.Time `json:"switchedOffAt,omitempty"`

	// OwnersNotifiedAt is when the account owners were emailed about the switch-off (once).
	// +optional
	OwnersNotifiedAt *metav1.Time `json:"ownersNotifiedAt,omitempty"`

	// LastDeliveryAt is when the last delivery attempt was made, to within an hour: an
	// unchanged outcome is written at most hourly, so deliveries do not each cost a write.
	// +optional
	LastDeliveryAt *metav1.Time `json:"lastDeliveryAt,omitempty"`

	// LastResponseCode is the HTTP status of the last attempt (0 when no response arrived).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=599
	LastResponseCode int32 `json:"lastResponseCode,omitempty"`

	// Conditions: Ready, SigningSecretReady, Failing.
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

// WebhookEndpoint is an HTTPS address to which the service posts signed events of an account.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=whep,categories=switchboard
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Rate",type=integer,JSONPath=`.spec.rateLimit`,description="deliveries per second at most"
// +kubebuilder:printcolumn:name="Failing Since",type=date,JSONPath=`.status.failingSince`
// +kubebuilder:printcolumn:name="Account",type=string,JSONPath=`.spec.accountID`,priority=1
// +kubebuilder:printcolumn:name="Events",type=string,JSONPath=`.spec.events`,priority=1
// +kubebuilder:printcolumn:name="Last Code",type=integer,JSONPath=`.status.lastResponseCode`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebhookEndpoint struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebhookEndpointSpec `json:"spec"`
	// +optional
	Status WebhookEndpointStatus `json:"status,omitempty"`
}

// WebhookEndpointList is a list of WebhookEndpoint.
// +kubebuilder:object:root=true
type WebhookEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebhookEndpoint `json:"items"`
}
