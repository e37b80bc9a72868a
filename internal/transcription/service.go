// Package transcription starts paid transcriptions (the charge in PostgreSQL, then the
// TranscriptionJob in the account's namespace), sweeps up jobs a crash left uncreated, starts
// automatic transcriptions, and holds the speech-to-text and summary engines the
// TranscriptionJob controller uses.
package transcription

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// LabelCall labels a TranscriptionJob with its call's public id.
const LabelCall = "switchboard.dev/call"

// JobName is the name of the TranscriptionJob of a charge: derived from the charge's public
// id, so creating it again (after a crash, by the sweeper) finds the one that exists.
func JobName(chargePublicID string) string {
	return strings.ReplaceAll(chargePublicID, "_", "-")
}

// JobFor is the TranscriptionJob of a charge.
func JobFor(ch store.TranscriptionCharge) *switchboardv1alpha1.TranscriptionJob {
	return &switchboardv1alpha1.TranscriptionJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:      JobName(ch.PublicID),
			Namespace: tenancy.Namespace(ch.AccountPublicID),
			Labels:    map[string]string{switchboardv1alpha1.AccountLabel: ch.AccountPublicID, LabelCall: ch.CallPublicID},
		},
		Spec: switchboardv1alpha1.TranscriptionJobSpec{
			AccountID:          ch.AccountPublicID,
			CallPublicID:       ch.CallPublicID,
			RecordingPublicID:  ch.RecordingPublicID,
			ChargeID:           ch.PublicID,
			ChargedMinutes:     int32(ch.Minutes),
			ChargedAmountPence: ch.AmountPence,
			AllowanceMinutes:   int32(ch.AllowanceMinutes),
			BundleMinutes:      int32(ch.BundleMinutes),
		},
	}
}

// EnsureJob creates the charge's TranscriptionJob (and the account's namespace when it is
// missing). A job that already exists is left as it is.
func EnsureJob(ctx context.Context, c client.Client, ch store.TranscriptionCharge) error {
	job := JobFor(ch)
	err := c.Create(ctx, job)
	if apierrors.IsNotFound(err) {
		// The account's first object in the cluster: make its namespace, then try again.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: job.Namespace,
			Labels: map[string]string{tenancy.LabelAccount: ch.AccountPublicID}}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
		err = c.Create(ctx, JobFor(ch))
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create transcription job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// Service starts transcriptions: the charge, then the job.
type Service struct {
	Store *store.Store
	// Kube creates TranscriptionJobs; nil leaves them to the sweeper (JobSweeper).
	Kube  client.Client
	Clock clock.PassiveClock
	// Links are the addresses in notifications.
	Links events.Links
	Log   logr.Logger
	// Queue, when set, creates jobs in the background after the charge is committed, so a
	// request does not wait on the kube-apiserver; when it is full (or unset) the job is
	// created before Start returns.
	Queue *JobQueue
}

// Start charges for a transcription (store.StartTranscription) and, once the charge is
// committed, creates its job. The charge row is the durable record: if the job cannot be
// created now, it is logged and the sweeper creates it later; nothing is charged twice.
func (s *Service) Start(ctx context.Context, req store.TranscribeRequest) (store.TranscribeResult, error) {
	if req.Now.IsZero() {
		req.Now = s.Clock.Now()
	}
	res, err := s.Store.StartTranscription(ctx, req)
	if err != nil {
		return res, err
	}
	if res.Outcome == store.TranscribeStarted && res.Charge != nil {
		c := res.Charge
		metrics.TranscriptionCharged(c.AllowanceMinutes, c.BundleMinutes, c.Minutes-c.AllowanceMinutes-c.BundleMinutes, c.AmountPence)
	}
	if res.Charge != nil && res.Charge.JobCreatedAt == nil && res.Charge.Status == store.ChargeCharged {
		if s.Queue.Enqueue(*res.Charge) {
			return res, nil
		}
		if err := s.CreateJob(ctx, *res.Charge); err != nil {
			s.Log.Error(err, "transcription job not created yet; the sweeper will create it", "charge", res.Charge.PublicID)
		}
	}
	return res, nil
}

// CreateJob creates the charge's job and records that it exists.
func (s *Service) CreateJob(ctx context.Context, ch store.TranscriptionCharge) error {
	if s.Kube == nil {
		return fmt.Errorf("no Kubernetes client configured")
	}
	if err := EnsureJob(ctx, s.Kube, ch); err != nil {
		return err
	}
	return s.Store.MarkTranscriptionJobCreated(ctx, ch.ID, s.Clock.Now())
}

// NotificationTranscriptionNotStarted is the notification type of an automatic transcription
// the account could not pay for.
const NotificationTranscriptionNotStarted = "transcription_not_started"

// AutoTranscribe transcribes a newly recorded call when the account has a live
// auto-transcribe key, charged like a requested transcription. It does nothing for numbers in
// privacy mode, voicemails and accounts without such a key, or whose plan has no
// transcription. When the account cannot pay, the call is left untranscribed and the account's
// owners get a notification saying why. The platform ingestion calls it for every recorded call.
func (s *Service) AutoTranscribe(ctx context.Context, accountID, callID int64) (store.TranscribeResult, error) {
	now := s.Clock.Now()
	res, err := s.Start(ctx, store.TranscribeRequest{AccountID: accountID, CallID: callID, Automatic: true, Now: now})
	if errors.Is(err, store.ErrTranscriptionUnavailable) || errors.Is(err, store.ErrNoRecording) {
		return res, nil
	}
	if err != nil || res.Outcome != store.TranscribeRefused {
		return res, err
	}
	title := "A call was not transcribed"
	body := fmt.Sprintf("The call from %s was not transcribed automatically: %s", res.CallerE164,
		billing.RefusalMessage(res.Estimate, res.Price))
	url := ""
	if s.Links.DashboardURL != "" {
		url = strings.TrimRight(s.Links.DashboardURL, "/") + "/calls/" + res.CallPublicID
	}
	if err := s.Store.NotifyAccountOwners(ctx, accountID, NotificationTranscriptionNotStarted, title, body, url, now); err != nil {
		return res, fmt.Errorf("notify that call %s was not transcribed: %w", res.CallPublicID, err)
	}
	return res, nil
}

// RecordedCall has the signature of ingest.Config.RecordedCall.
func (s *Service) RecordedCall(ctx context.Context, accountID, callID int64) error {
	_, err := s.AutoTranscribe(ctx, accountID, callID)
	return err
}

// jobCreateTimeout bounds one background job creation (a hung kube-apiserver must not stall a worker).
const jobCreateTimeout = 30 * time.Second

// JobQueue creates TranscriptionJobs in the background on every replica. A job lost from the
// queue (a crash, a full queue) is not lost: its charge row says no job exists yet, and the
// JobSweeper creates it.
type JobQueue struct {
	service *Service
	workers int
	charges chan store.TranscriptionCharge
}

// NewJobQueue makes a queue of up to size charges served by workers goroutines once started;
// svc creates the jobs.
func NewJobQueue(svc *Service, size, workers int) *JobQueue {
	return &JobQueue{service: svc, workers: max(workers, 1), charges: make(chan store.TranscriptionCharge, max(size, 1))}
}

// Enqueue hands a charge's job to the queue; false when there is no queue or it is full.
func (q *JobQueue) Enqueue(ch store.TranscriptionCharge) bool {
	if q == nil {
		return false
	}
	select {
	case q.charges <- ch:
		return true
	default:
		return false
	}
}

// NeedLeaderElection: every replica creates the jobs of the charges it made.
func (q *JobQueue) NeedLeaderElection() bool { return false }

// Start creates queued jobs until ctx ends.
func (q *JobQueue) Start(ctx context.Context) error {
	done := make(chan struct{})
	for range q.workers {
		go func() {
			for {
				select {
				case <-ctx.Done():
					done <- struct{}{}
					return
				case ch := <-q.charges:
					jobCtx, cancel := context.WithTimeout(ctx, jobCreateTimeout)
					if err := q.service.CreateJob(jobCtx, ch); err != nil && ctx.Err() == nil {
						q.service.Log.Error(err, "transcription job not created yet; the sweeper will create it", "charge", ch.PublicID)
					}
					cancel()
				}
			}
		}()
	}
	for range q.workers {
		<-done
	}
	return nil
}

// JobSweeper creates the jobs of charges whose job creation did not happen (a crash or an
// unreachable kube-apiserver between the charge and the job). Run it on the leader only.
type JobSweeper struct {
	Service *Service
	Clock   clock.WithTicker
	// Grace is how old a charge without a job must be before it is swept (default 30 s):
	// younger ones are still being handled by the request that made them.
	Grace time.Duration
	// Interval between sweeps (default 15 s).
	Interval time.Duration
}

// NeedLeaderElection: one sweeper is enough.
func (j *JobSweeper) NeedLeaderElection() bool { return true }

// Start sweeps every Interval until ctx ends.
func (j *JobSweeper) Start(ctx context.Context) error {
	interval := j.Interval
	if interval <= 0 {
		interval = 15 * time.Second
	}
	t := j.Clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if _, err := j.SweepOnce(ctx); err != nil && ctx.Err() == nil {
				j.Service.Log.Error(err, "sweep transcription charges without a job")
			}
		}
	}
}

// SweepOnce creates the missing jobs of charges older than Grace and returns how many it created.
func (j *JobSweeper) SweepOnce(ctx context.Context) (int, error) {
	grace := j.Grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	charges, err := j.Service.Store.ChargesWithoutJob(ctx, j.Clock.Now().Add(-grace), 100)
	if err != nil {
		return 0, err
	}
	made := 0
	for _, ch := range charges {
		if err := j.Service.CreateJob(ctx, ch); err != nil {
			return made, err
		}
		made++
	}
	return made, nil
}
