/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	kubeevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Defaults of TranscriptionJobReconciler.
const (
	DefaultTranscriptionMaxAttempts = 5
	DefaultTranscriptionRetryBase   = 15 * time.Second
	DefaultTranscriptionRetryMax    = 10 * time.Minute
	DefaultTranscriptionJobTTL      = 10 * time.Minute
	DefaultTranscriptionStepTimeout = 15 * time.Minute
)

// nextPhase is the wait before a job's next phase runs: long enough for the informer cache
// to see the status just written (a stale read only costs an optimistic-lock conflict, and
// every step is guarded in the database anyway).
const nextPhase = 200 * time.Millisecond

// TranscriptionJobReconciler runs paid transcriptions: Pending → Transcribing → Summarizing →
// Completed, or Failed with the charge refunded. The results live in PostgreSQL; each step's
// write is guarded there by the transcript's status, so a step repeated after a lost status
// update (or a restart) never stores or announces anything twice. Finished jobs are deleted
// TTL after they finish.
type TranscriptionJobReconciler struct {
	client.Client
	Store        *store.Store
	Recordings   recordingstore.Store
	SpeechToText transcription.SpeechToText
	Summarizer   transcription.Summarizer
	// Links are the addresses in the transcript.ready event.
	Links events.Links
	Clock clock.PassiveClock

	// MaxAttempts of each engine (speech to text, summary) before giving up.
	MaxAttempts int
	// RetryBase doubles after every failed attempt, up to RetryMax.
	RetryBase time.Duration
	RetryMax  time.Duration
	// TTL is how long a finished job stays in the cluster.
	TTL time.Duration
	// FinishedRecheck, when set, bounds the wait before a finished job's TTL is checked again
	// (tests whose clock is stepped by hand; unset, the job is requeued for exactly its TTL).
	FinishedRecheck time.Duration
	// StepTimeout bounds one engine call.
	StepTimeout time.Duration
	// MaxConcurrentReconciles: jobs worked on at once (default 2).
	MaxConcurrentReconciles int
	// Recorder, when set, records an Event when a job completes or fails.
	Recorder kubeevents.EventRecorder
}

// Reconcile dispatches on the job's phase; the status is patched once, on the way out.
func (r *TranscriptionJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	job := &switchboardv1alpha1.TranscriptionJob{}
	if err := r.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if finished(job) {
		return r.reconcileFinished(ctx, job)
	}

	base := job.DeepCopy()
	defer func() {
		if retErr == nil {
			// Only a reconcile that succeeded has observed this generation.
			job.Status.ObservedGeneration = job.Generation
		}
		if err := patchStatus(ctx, r.Client, base, job, transcriptionJobStatus, client.MergeFromWithOptimisticLock{}); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, client.IgnoreNotFound(err)})
		}
	}()

	switch job.Status.Phase {
	case "":
		return r.reconcileNew(job)
	case switchboardv1alpha1.TranscriptionJobPhasePending:
		return r.reconcilePending(ctx, job)
	case switchboardv1alpha1.TranscriptionJobPhaseTranscribing:
		return r.reconcileTranscribing(ctx, job)
	case switchboardv1alpha1.TranscriptionJobPhaseSummarizing:
		return r.reconcileSummarizing(ctx, job)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller.
func (r *TranscriptionJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.defaults()
	return ctrl.NewControllerManagedBy(mgr).
		// Only creation (and the requeues below) start work: a status update must not cut a
		// retry's backoff short. The spec never changes, so later events carry nothing new.
		// Jobs outside their account's namespace are not acted on: a job can only spend the
		// money of the account whose namespace holds it.
		For(&switchboardv1alpha1.TranscriptionJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, inAccountNamespace)).
		Named("transcriptionjob").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// untilExpiry requeues a finished job when its TTL (left from now) has passed.
func (r *TranscriptionJobReconciler) untilExpiry(left time.Duration) ctrl.Result {
	if r.FinishedRecheck > 0 && left > r.FinishedRecheck {
		left = r.FinishedRecheck
	}
	return ctrl.Result{RequeueAfter: left}
}

// inAccountNamespace passes jobs that live in the namespace of the account they name.
var inAccountNamespace = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	job, ok := obj.(*switchboardv1alpha1.TranscriptionJob)
	if !ok {
		return false
	}
	acct, ok := tenancy.AccountOf(job.Namespace)
	return ok && acct == job.Spec.AccountID
})

func (r *TranscriptionJobReconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultTranscriptionMaxAttempts
	}
	if r.RetryBase <= 0 {
		r.RetryBase = DefaultTranscriptionRetryBase
	}
	if r.RetryMax <= 0 {
		r.RetryMax = DefaultTranscriptionRetryMax
	}
	if r.TTL <= 0 {
		r.TTL = DefaultTranscriptionJobTTL
	}
	if r.StepTimeout <= 0 {
		r.StepTimeout = DefaultTranscriptionStepTimeout
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 2
	}
}

// reconcileFinished deletes a Completed or Failed job TTL after it finished.
func (r *TranscriptionJobReconciler) reconcileFinished(ctx context.Context, job *switchboardv1alpha1.TranscriptionJob) (ctrl.Result, error) {
	finishedAt := job.CreationTimestamp.Time
	if job.Status.CompletedAt != nil {
		finishedAt = job.Status.CompletedAt.Time
	}
	if left := finishedAt.Add(r.TTL).Sub(r.Clock.Now()); left > 0 {
		return r.untilExpiry(left), nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, job, client.Preconditions{UID: &job.UID}))
}
