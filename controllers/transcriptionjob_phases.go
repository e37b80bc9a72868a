/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// reconcileNew starts the job: Pending.
func (r *TranscriptionJobReconciler) reconcileNew(job *switchboardv1alpha1.TranscriptionJob) (ctrl.Result, error) {
	now := metav1.NewTime(r.Clock.Now())
	job.Status.StartedAt = &now
	r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhasePending)
	return ctrl.Result{RequeueAfter: nextPhase}, nil
}

// reconcilePending checks the charge and the recording, then starts transcribing.
func (r *TranscriptionJobReconciler) reconcilePending(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob) (ctrl.Result, error) {
	if _, done, res, err := r.preflight(ctx, job); done {
		return res, err
	}
	r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseTranscribing)
	r.setCondition(job, switchboardv1alpha1.ConditionTranscribed, metav1.ConditionFalse, switchboardv1alpha1.ReasonInProgress, "Transcribing the recording.")
	return ctrl.Result{RequeueAfter: nextPhase}, nil
}

// preflight reads what the job needs from the database and acts on transcription.Preflight,
// the one check of every phase: done true when the job's status has been settled here (an
// invalid or refunded charge, work already done, a deleted recording) and res, err are the
// phase's answer.
func (r *TranscriptionJobReconciler) preflight(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob) (store.TranscriptionWork, bool, ctrl.Result, error) {
	work, err := r.Store.GetTranscriptionWork(ctx, job.Spec.ChargeID)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return work, true, ctrl.Result{}, err
	}
	step := transcription.Preflight(work, found, transcription.JobRef{AccountID: job.Spec.AccountID, CallPublicID: job.Spec.CallPublicID,
		Summarizing: job.Status.Phase == switchboardv1alpha1.TranscriptionJobPhaseSummarizing})
	switch step {
	case transcription.StepInvalid:
		msg := "Charge " + job.Spec.ChargeID + " is not for this account and call."
		if !found {
			msg = "No charge " + job.Spec.ChargeID + " exists."
		}
		r.failWithoutRefund(job, switchboardv1alpha1.ReasonInvalidSpec, msg)
		return work, true, r.untilExpiry(r.TTL), nil
	case transcription.StepRefunded:
		job.Status.Refunded = true
		r.setCondition(job, switchboardv1alpha1.ConditionRefunded, metav1.ConditionTrue, switchboardv1alpha1.ReasonChargeRefunded, "The charge was refunded.")
		r.failWithoutRefund(job, switchboardv1alpha1.ReasonChargeRefunded, "The charge was refunded.")
		return work, true, r.untilExpiry(r.TTL), nil
	case transcription.StepCompleted:
		r.setCondition(job, switchboardv1alpha1.ConditionTranscribed, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The transcript is stored.")
		if work.SummaryStatus == "completed" {
			r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The summary is stored.")
		}
		r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		return work, true, r.untilExpiry(r.TTL), nil
	case transcription.StepSummarize:
		r.setCondition(job, switchboardv1alpha1.ConditionTranscribed, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The transcript is stored.")
		r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseSummarizing)
		r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionFalse, switchboardv1alpha1.ReasonInProgress, "Summarizing the transcript.")
		return work, true, ctrl.Result{RequeueAfter: nextPhase}, nil
	case transcription.StepRecordingMissing:
		res, err := r.fail(ctx, job, switchboardv1alpha1.ReasonRecordingMissing, "The recording was deleted before it could be transcribed.")
		return work, true, res, err
	}
	return work, false, ctrl.Result{}, nil
}

// reconcileTranscribing fetches the audio and turns it into text.
func (r *TranscriptionJobReconciler) reconcileTranscribing(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	work, done, res, err := r.preflight(ctx, job)
	if done {
		return res, err
	}
	job.Status.Attempts++
	speech, err := r.transcribe(ctx, work)
	if err != nil {
		log.Error(err, "speech to text failed", "attempt", job.Status.Attempts)
		switch {
		case errors.Is(err, recordingstore.ErrNotFound):
			return r.fail(ctx, job, switchboardv1alpha1.ReasonRecordingMissing, "The recording's audio is missing.")
		case transcription.IsPermanent(err):
			return r.fail(ctx, job, switchboardv1alpha1.ReasonEngineRefused, "Speech to text refused the recording: "+err.Error())
		case int(job.Status.Attempts) >= r.MaxAttempts:
			return r.fail(ctx, job, switchboardv1alpha1.ReasonAttemptsExceeded,
				fmt.Sprintf("Speech to text failed %d times; last error: %v", job.Status.Attempts, err))
		}
		wait := r.backoff(job.Status.Attempts)
		r.setCondition(job, switchboardv1alpha1.ConditionTranscribed, metav1.ConditionFalse, switchboardv1alpha1.ReasonRetrying,
			fmt.Sprintf("Attempt %d failed (%v); retrying in %s.", job.Status.Attempts, err, wait))
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if strings.TrimSpace(speech.Text) == "" {
		return r.fail(ctx, job, switchboardv1alpha1.ReasonNoSpeech, "No speech was recognised in the recording.")
	}
	text := store.TranscriptText{Text: speech.Text, Language: speech.Language, Segments: make([]store.TranscriptSegment, len(speech.Segments))}
	for i, sg := range speech.Segments {
		text.Segments[i] = store.TranscriptSegment{StartSeconds: sg.Start, EndSeconds: sg.End, Speaker: sg.Speaker, Text: sg.Text}
	}
	if _, err := r.Store.SaveTranscriptText(ctx, job.Spec.ChargeID, text, r.Clock.Now()); err != nil {
		if errors.Is(err, store.ErrChargeRefunded) {
			return ctrl.Result{RequeueAfter: nextPhase}, nil // settled on the next pass
		}
		return ctrl.Result{}, err
	}
	r.setCondition(job, switchboardv1alpha1.ConditionTranscribed, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The transcript is stored.")
	r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseSummarizing)
	r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionFalse, switchboardv1alpha1.ReasonInProgress, "Summarizing the transcript.")
	return ctrl.Result{RequeueAfter: nextPhase}, nil
}

func (r *TranscriptionJobReconciler) transcribe(ctx context.Context, work store.TranscriptionWork) (transcription.Speech, error) {
	ctx, cancel := context.WithTimeout(ctx, r.StepTimeout)
	defer cancel()
	obj, err := r.Recordings.Open(ctx, work.StorageKey)
	if err != nil {
		return transcription.Speech{}, err
	}
	defer func() { _ = obj.Close() }()
	return r.SpeechToText.Transcribe(ctx, transcription.Audio{Data: obj, Filename: path.Base(work.StorageKey), ContentType: work.ContentType})
}

// reconcileSummarizing makes the summary and finishes the transcript (to-dos and
// transcript.ready in the same transaction). A summary that cannot be made after the
// attempts still completes the job: the transcript was delivered, summary_status is failed.
func (r *TranscriptionJobReconciler) reconcileSummarizing(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	work, done, res, err := r.preflight(ctx, job)
	if done {
		return res, err
	}
	job.Status.SummaryAttempts++
	stepCtx, cancel := context.WithTimeout(ctx, r.StepTimeout)
	sum, err := r.Summarizer.Summarize(stepCtx, transcription.SummaryInput{Text: work.Text, CallerE164: work.CallerE164})
	cancel()
	result := store.TranscriptSummary{Status: "completed"}
	if err != nil {
		log.Error(err, "summary failed", "attempt", job.Status.SummaryAttempts)
		if !transcription.IsPermanent(err) && int(job.Status.SummaryAttempts) < r.MaxAttempts {
			wait := r.backoff(job.Status.SummaryAttempts)
			r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionFalse, switchboardv1alpha1.ReasonRetrying,
				fmt.Sprintf("Attempt %d failed (%v); retrying in %s.", job.Status.SummaryAttempts, err, wait))
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		result.Status = "failed"
	} else {
		sum = transcription.Normalize(sum)
		result = store.TranscriptSummary{Status: "completed", Summary: sum.Summary, Intent: sum.Intent, Sentiment: sum.Sentiment,
			Urgency: sum.Urgency, ActionItems: sum.ActionItems, CallbackNumber: sum.CallbackNumber}
	}
	if _, err := r.Store.CompleteTranscriptSummary(ctx, job.Spec.ChargeID, result, r.Links, r.Clock.Now()); err != nil {
		if errors.Is(err, store.ErrChargeRefunded) {
			return ctrl.Result{RequeueAfter: nextPhase}, nil
		}
		return ctrl.Result{}, err
	}
	if result.Status == "completed" {
		r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionTrue, switchboardv1alpha1.ReasonCompleted, "The summary is stored.")
	} else {
		r.setCondition(job, switchboardv1alpha1.ConditionSummarized, metav1.ConditionFalse, switchboardv1alpha1.ReasonSummaryFailed,
			fmt.Sprintf("No summary could be made after %d attempts: %v", job.Status.SummaryAttempts, err))
	}
	r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
	return r.untilExpiry(r.TTL), nil
}

// fail refunds the charge and marks the job Failed.
func (r *TranscriptionJobReconciler) fail(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob, reason, message string) (ctrl.Result, error) {
	if _, err := r.Store.RefundTranscription(ctx, job.Spec.ChargeID, message, r.Clock.Now()); err != nil {
		if errors.Is(err, store.ErrTranscriptCompleted) {
			return ctrl.Result{RequeueAfter: nextPhase}, nil // the text was stored after all: carry on from the database
		}
		return ctrl.Result{}, err
	}
	if !job.Status.Refunded {
		metrics.TranscriptionRefunded(job.Spec.ChargedAmountPence)
	}
	job.Status.Refunded = true
	r.setCondition(job, switchboardv1alpha1.ConditionRefunded, metav1.ConditionTrue, switchboardv1alpha1.ReasonChargeRefunded,
		fmt.Sprintf("Refunded %d minutes and %dp.", job.Spec.ChargedMinutes, job.Spec.ChargedAmountPence))
	r.failWithoutRefund(job, reason, message)
	return r.untilExpiry(r.TTL), nil
}

func (r *TranscriptionJobReconciler) failWithoutRefund(job *switchboardv1alpha1.TranscriptionJob, reason, message string) {
	job.Status.FailureReason = truncate(message, 1024)
	r.setCondition(job, switchboardv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	r.setPhase(job, switchboardv1alpha1.TranscriptionJobPhaseFailed)
}
