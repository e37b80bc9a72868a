/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
)

// transcriptionJobStatus is what patchStatus compares for a job.
func transcriptionJobStatus(job *switchboardv1alpha1.TranscriptionJob) any { return job.Status }

// finished reports whether the job reached Completed or Failed.
func finished(job *switchboardv1alpha1.TranscriptionJob) bool {
	p := job.Status.Phase
	return p == switchboardv1alpha1.TranscriptionJobPhaseCompleted || p == switchboardv1alpha1.TranscriptionJobPhaseFailed
}

// setCondition sets a condition of the job at the job's generation.
func (r *TranscriptionJobReconciler) setCondition(job *switchboardv1alpha1.TranscriptionJob, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(message, 32768),
		ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
}

// setPhase moves the job to phase and keeps Ready in step with it.
func (r *TranscriptionJobReconciler) setPhase(job *switchboardv1alpha1.TranscriptionJob, phase switchboardv1alpha1.TranscriptionJobPhase) {
	if job.Status.Phase != phase && r.Recorder != nil {
		switch phase {
		case switchboardv1alpha1.TranscriptionJobPhaseCompleted:
			r.Recorder.Eventf(job, nil, corev1.EventTypeNormal, "Completed", "Transcribe", "The transcript of call %s is stored", job.Spec.CallPublicID)
		case switchboardv1alpha1.TranscriptionJobPhaseFailed:
			r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "Failed", "Transcribe", "%s", job.Status.FailureReason)
		}
	}
	if job.Status.Phase != phase && (phase == switchboardv1alpha1.TranscriptionJobPhaseCompleted || phase == switchboardv1alpha1.TranscriptionJobPhaseFailed) {
		metrics.TranscriptionJobFinished(phase, r.Clock.Since(job.CreationTimestamp.Time))
	}
	job.Status.Phase = phase
	switch phase {
	case switchboardv1alpha1.TranscriptionJobPhaseCompleted:
		r.setCondition(job, switchboardv1alpha1.ConditionReady, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The transcript is stored and transcript.ready is queued.")
	case switchboardv1alpha1.TranscriptionJobPhaseFailed:
		// Ready is set by fail with the reason.
	default:
		r.setCondition(job, switchboardv1alpha1.ConditionReady, metav1.ConditionFalse, switchboardv1alpha1.ReasonReconciling, "Phase "+string(phase)+".")
	}
	if phase == switchboardv1alpha1.TranscriptionJobPhaseCompleted || phase == switchboardv1alpha1.TranscriptionJobPhaseFailed {
		now := metav1.NewTime(r.Clock.Now())
		job.Status.CompletedAt = &now
	}
}

// backoff is the wait before attempt n+1 after n failed attempts: RetryBase doubling, capped.
func (r *TranscriptionJobReconciler) backoff(failed int32) time.Duration {
	d := r.RetryBase
	for i := int32(1); i < failed && d < r.RetryMax; i++ {
		d *= 2
	}
	return min(d, r.RetryMax)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
