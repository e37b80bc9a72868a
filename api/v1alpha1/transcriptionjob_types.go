/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TranscriptionJobPhase is the lifecycle state of a transcription.
// +kubebuilder:validation:Enum=Pending;Transcribing;Summarizing;Completed;Failed
type TranscriptionJobPhase string

const (
	// TranscriptionJobPhasePending: charged, not started (API status "pending").
	TranscriptionJobPhasePending TranscriptionJobPhase = "Pending"
	// TranscriptionJobPhaseTranscribing: the recording is being transcribed.
	TranscriptionJobPhaseTranscribing TranscriptionJobPhase = "Transcribing"
	// TranscriptionJobPhaseSummarizing: the transcript exists; the AI summary is being made.
	TranscriptionJobPhaseSummarizing TranscriptionJobPhase = "Summarizing"
	// TranscriptionJobPhaseCompleted: transcript (and summary if one could be made) stored;
	// transcript.ready has been queued.
	TranscriptionJobPhaseCompleted TranscriptionJobPhase = "Completed"
	// TranscriptionJobPhaseFailed: gave up; the charge is refunded (status.refunded).
	TranscriptionJobPhaseFailed TranscriptionJobPhase = "Failed"
)

// Condition types and reasons of a TranscriptionJob. Ready is True once it completed.
const (
	// ConditionTranscribed: the transcript text is stored.
	ConditionTranscribed = "Transcribed"
	// ConditionSummarized: the AI summary is stored (or could not be made; see reason).
	ConditionSummarized = "Summarized"
	// ConditionRefunded: the charge was given back after a failure.
	ConditionRefunded = "Refunded"

	ReasonInProgress       = "InProgress"
	ReasonCompleted        = "Completed"
	ReasonSummaryFailed    = "SummaryFailed"
	ReasonRecordingMissing = "RecordingMissing"
	ReasonAttemptsExceeded = "AttemptsExceeded"
	ReasonChargeRefunded   = "ChargeRefunded"
	ReasonRetrying         = "Retrying"
	ReasonEngineRefused    = "EngineRefused"
	// ReasonNoSpeech: the engine recognised no speech in the recording (silence, a tone, noise),
	// so there is nothing to charge for.
	ReasonNoSpeech = "NoSpeech"
)

// TranscriptionJobSpec is a paid transcription of one recorded call, created by the API after
// the charge was made in PostgreSQL. It cannot change once created.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a transcription job records a charge already made"
// +kubebuilder:validation:XValidation:rule="self.allowanceMinutes + self.bundleMinutes <= self.chargedMinutes",message="allowanceMinutes plus bundleMinutes cannot exceed chargedMinutes"
type TranscriptionJobSpec struct {
	// AccountID is the public_id of the account that was charged.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	AccountID string `json:"accountID"`

	// CallPublicID is the public_id of the call being transcribed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	CallPublicID string `json:"callPublicID"`

	// RecordingPublicID is the public_id of the call's recording.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	RecordingPublicID string `json:"recordingPublicID"`

	// ChargeID is the id of the charge row in PostgreSQL (used to refund it on failure).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ChargeID string `json:"chargeID"`

	// ChargedMinutes is the billed length of the recording in whole minutes.
	// +required
	// +kubebuilder:validation:Minimum=0
	ChargedMinutes int32 `json:"chargedMinutes"`

	// ChargedAmountPence is what was taken from the prepaid balance, in pence (GBP).
	// +required
	// +kubebuilder:validation:Minimum=0
	ChargedAmountPence int64 `json:"chargedAmountPence"`

	// AllowanceMinutes is the part of ChargedMinutes paid from the plan's monthly allowance.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	AllowanceMinutes int32 `json:"allowanceMinutes"`

	// BundleMinutes is the part of ChargedMinutes paid from prepaid bundle minutes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	BundleMinutes int32 `json:"bundleMinutes"`
}

// TranscriptionJobStatus is the progress of a transcription.
type TranscriptionJobStatus struct {
	// Phase is Pending, Transcribing, Summarizing, Completed or Failed.
	// +optional
	Phase TranscriptionJobPhase `json:"phase,omitempty"`

	// Attempts is how many times transcription was tried.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts,omitempty"`

	// SummaryAttempts is how many times the AI summary was tried.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SummaryAttempts int32 `json:"summaryAttempts,omitempty"`

	// StartedAt is when the first attempt started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// CompletedAt is when the job reached Completed or Failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// FailureReason says why the job failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	FailureReason string `json:"failureReason,omitempty"`

	// Refunded is true once the charge was given back after a failure.
	// +optional
	Refunded bool `json:"refunded,omitempty"`

	// Conditions: Ready, Transcribed, Summarized, Refunded.
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

// TranscriptionJob transcribes and summarizes one recorded call that has been paid for.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tj,categories=switchboard
// +kubebuilder:printcolumn:name="Call",type=string,JSONPath=`.spec.callPublicID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Minutes",type=integer,JSONPath=`.spec.chargedMinutes`
// +kubebuilder:printcolumn:name="Amount",type=integer,JSONPath=`.spec.chargedAmountPence`,description="Pence charged to the prepaid balance"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Account",type=string,JSONPath=`.spec.accountID`,priority=1
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`,priority=1
// +kubebuilder:printcolumn:name="Refunded",type=boolean,JSONPath=`.status.refunded`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TranscriptionJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TranscriptionJobSpec `json:"spec"`
	// +optional
	Status TranscriptionJobStatus `json:"status,omitempty"`
}

// TranscriptionJobList is a list of TranscriptionJob.
// +kubebuilder:object:root=true
type TranscriptionJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TranscriptionJob `json:"items"`
}
