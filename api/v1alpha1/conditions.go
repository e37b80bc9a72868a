/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// Label and condition names shared by every kind of this package.
const (
	// AccountLabel labels every object (and namespace) with the public_id of its account.
	AccountLabel = "switchboard.dev/account"

	// ConditionReady is the summary condition of every kind: True when the object is in the
	// state its spec asks for (endpoint deliverable, delivery delivered, job completed).
	ConditionReady = "Ready"

	// ReasonReconciling: the controller is still working towards the desired state.
	ReasonReconciling = "Reconciling"
	// ReasonInvalidSpec: the spec passed schema validation but cannot be acted on.
	ReasonInvalidSpec = "InvalidSpec"
)
