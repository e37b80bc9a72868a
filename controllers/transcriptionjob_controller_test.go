/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// What the TranscriptionJob tests share: one database, a fake clock, scripted engines.
var tj struct {
	store      *store.Store
	clock      *clocktesting.FakeClock
	recordings recordingstore.Store
	stt        *scriptedSTT
	summarizer *scriptedSummarizer
	links      events.Links
}

const (
	tjTTL       = time.Hour
	tjRetryBase = 50 * time.Millisecond
	// tjTTLRecheck is how often finished jobs look at the (fake) clock again.
	tjTTLRecheck = 300 * time.Millisecond
)

// setupTranscriptionJobs registers the TranscriptionJobReconciler on the suite's manager.
func setupTranscriptionJobs(mgr ctrl.Manager) {
	GinkgoHelper()
	DeferCleanup(storetest.Shutdown)
	tj.store = storetest.NewStore(GinkgoT())
	tj.clock = clocktesting.NewFakeClock(time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC))
	var err error
	tj.recordings, err = recordingstore.NewLocal(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	tj.stt = &scriptedSTT{failures: map[string]int{}}
	tj.summarizer = &scriptedSummarizer{}
	tj.links = events.Links{APIBaseURL: "https://api.example.test", DashboardURL: "https://app.example.test"}
	shippedSTT, shippedSummarizer, err := transcription.NewEngines(transcription.EngineConfig{})
	Expect(err).NotTo(HaveOccurred())
	Expect((&TranscriptionJobReconciler{
		Client: mgr.GetClient(), Store: tj.store, Recordings: tj.recordings,
		SpeechToText: routedSTT{scripted: tj.stt, shipped: shippedSTT},
		Summarizer:   routedSummarizer{scripted: tj.summarizer, shipped: shippedSummarizer},
		Links:        tj.links, Clock: tj.clock,
		MaxAttempts: 3, RetryBase: tjRetryBase, RetryMax: time.Second, TTL: tjTTL, FinishedRecheck: tjTTLRecheck,
		MaxConcurrentReconciles: 4, Recorder: mgr.GetEventRecorder("switchboard-transcription"),
	}).SetupWithManager(mgr)).To(Succeed())
}

// Recordings stored as shippedPrefix* from calls by shippedCaller go to the engines `serve`
// runs by default (Vosk and the built-in summarizer); all others to the scripted ones.
const (
	shippedPrefix = "shipped-"
	shippedCaller = "+441514960999"
)

type routedSTT struct {
	scripted *scriptedSTT
	shipped  transcription.SpeechToText
}

func (r routedSTT) Transcribe(ctx context.Context, a transcription.Audio) (transcription.Speech, error) {
	if strings.HasPrefix(a.Filename, shippedPrefix) {
		return r.shipped.Transcribe(ctx, a)
	}
	return r.scripted.Transcribe(ctx, a)
}

type routedSummarizer struct {
	scripted *scriptedSummarizer
	shipped  transcription.Summarizer
}

func (r routedSummarizer) Summarize(ctx context.Context, in transcription.SummaryInput) (transcription.Summary, error) {
	if in.CallerE164 == shippedCaller {
		return r.shipped.Summarize(ctx, in)
	}
	return r.scripted.Summarize(ctx, in)
}

// scriptedSTT "transcribes" the audio bytes as text. Audio starting with "fail:N " fails N
// times first (per audio); "refuse" is refused permanently.
type scriptedSTT struct {
	mu       sync.Mutex
	failures map[string]int
}

func (s *scriptedSTT) Transcribe(_ context.Context, a transcription.Audio) (transcription.Speech, error) {
	b, err := io.ReadAll(a.Data)
	if err != nil {
		return transcription.Speech{}, err
	}
	text := string(b)
	if strings.HasPrefix(text, "refuse") {
		return transcription.Speech{}, transcription.Permanent(errors.New("400 unsupported audio"))
	}
	var n int
	if _, err := fmt.Sscanf(text, "fail:%d ", &n); err == nil {
		s.mu.Lock()
		s.failures[a.Filename]++
		tries := s.failures[a.Filename]
		s.mu.Unlock()
		if tries <= n {
			return transcription.Speech{}, fmt.Errorf("engine busy (try %d)", tries)
		}
		text = text[strings.Index(text, " ")+1:]
	}
	return transcription.Speech{Text: text, Language: "en", Segments: []transcription.Segment{
		{Start: 0, End: 1.5, Speaker: "caller", Text: text},
	}}, nil
}

// scriptedSummarizer fails on transcripts containing "no summary"; otherwise it summarizes.
type scriptedSummarizer struct{}

func (scriptedSummarizer) Summarize(_ context.Context, in transcription.SummaryInput) (transcription.Summary, error) {
	if strings.Contains(in.Text, "no summary") {
		return transcription.Summary{}, errors.New("summary engine down")
	}
	return transcription.Summary{Summary: "Summary: " + in.Text, Intent: "Book Repair", Sentiment: "positive", Urgency: "urgent?",
		ActionItems: []string{"Call back", " ", "Call back", "Book the repair"}, CallbackNumber: ptrTo("07700 900456")}, nil
}

func ptrTo[T any](v T) *T { return &v }

// funded is a Business account with money and an owner key.
func funded(balance int64) apitest.Tenant {
	GinkgoHelper()
	t := apitest.NewTenant(GinkgoT(), tj.store, plans.Business)
	txtest.Fund(GinkgoT(), tj.store, t.Account.ID, balance, store.AccountSettings{TranscriptionRatePencePerMin: ptrTo(5)})
	txtest.UseAllowance(GinkgoT(), tj.store, t.Account.ID, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	DeferCleanup(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenancy.Namespace(t.Account.PublicID)}}
		_ = k8sClient.Delete(ctx, ns)
	})
	return t
}

// recorded adds a recorded call whose audio is the given text.
func recorded(t apitest.Tenant, audio string, o txtest.CallOptions) txtest.Call {
	GinkgoHelper()
	c := txtest.RecordedCall(GinkgoT(), tj.store, t.Account.ID, o)
	Expect(tj.recordings.Put(ctx, c.StorageKey, strings.NewReader(audio))).To(Succeed())
	return c
}

func service() *transcription.Service {
	return &transcription.Service{Store: tj.store, Kube: k8sClient, Clock: tj.clock, Links: tj.links, Log: GinkgoLogr}
}

func start(t apitest.Tenant, c txtest.Call) *store.TranscriptionCharge {
	GinkgoHelper()
	res, err := service().Start(ctx, store.TranscribeRequest{AccountID: t.Account.ID, CallPublicID: c.PublicID})
	Expect(err).NotTo(HaveOccurred())
	Expect(res.Outcome).To(Equal(store.TranscribeStarted))
	return res.Charge
}

func jobKey(ch *store.TranscriptionCharge) types.NamespacedName {
	return types.NamespacedName{Namespace: tenancy.Namespace(ch.AccountPublicID), Name: transcription.JobName(ch.PublicID)}
}

func eventuallyPhase(ch *store.TranscriptionCharge, phase switchboardv1alpha1.TranscriptionJobPhase) *switchboardv1alpha1.TranscriptionJob {
	GinkgoHelper()
	job := &switchboardv1alpha1.TranscriptionJob{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, jobKey(ch), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(phase))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return job
}

func transcriptOf(t apitest.Tenant, c txtest.Call) store.Transcript {
	GinkgoHelper()
	tr, err := tj.store.GetTranscript(ctx, t.Account.ID, c.RecordingID)
	Expect(err).NotTo(HaveOccurred())
	return tr
}

func countRows(query string, args ...any) int {
	GinkgoHelper()
	var n int
	Expect(storetest.SQL(GinkgoT(), tj.store).QueryRow(ctx, query, args...).Scan(&n)).To(Succeed())
	return n
}

var _ = Describe("TranscriptionJob controller", func() {
	It("creates the job (and the account's namespace) after the charge, transcribes, summarizes, queues transcript.ready once and leaves etcd after the TTL", func() {
		t := funded(1000)
		c := recorded(t, "Hi, my boiler is broken, please call me back.", txtest.CallOptions{Seconds: 90})
		ch := start(t, c)

		By("the job exists at once, in the account's namespace, recorded on the charge")
		var job switchboardv1alpha1.TranscriptionJob
		Expect(k8sClient.Get(ctx, jobKey(ch), &job)).To(Succeed())
		Expect(job.Spec).To(Equal(switchboardv1alpha1.TranscriptionJobSpec{AccountID: t.Account.PublicID, CallPublicID: c.PublicID,
			RecordingPublicID: c.RecordingPublicID, ChargeID: ch.PublicID, ChargedMinutes: 2, ChargedAmountPence: 10}))
		Expect(job.Labels).To(HaveKeyWithValue(switchboardv1alpha1.AccountLabel, t.Account.PublicID))
		var ns corev1.Namespace
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: tenancy.Namespace(t.Account.PublicID)}, &ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(tenancy.LabelAccount, t.Account.PublicID))
		stored, err := tj.store.GetTranscriptionCharge(ctx, ch.PublicID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.JobCreatedAt).NotTo(BeNil())

		By("creating it again is harmless")
		Expect(transcription.EnsureJob(ctx, k8sClient, *ch)).To(Succeed())

		By("the job completes")
		done := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		Expect(done.Status.Attempts).To(Equal(int32(1)))
		Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
		Expect(done.Status.StartedAt).NotTo(BeNil())
		Expect(done.Status.CompletedAt.Time).To(BeTemporally("==", tj.clock.Now()))
		for _, cond := range []string{switchboardv1alpha1.ConditionReady, switchboardv1alpha1.ConditionTranscribed, switchboardv1alpha1.ConditionSummarized} {
			Expect(meta.IsStatusConditionTrue(done.Status.Conditions, cond)).To(BeTrue(), cond)
		}
		Expect(done.Status.Refunded).To(BeFalse())
		Eventually(func(g Gomega) []string { return eventReasons(g, done) }).WithTimeout(10 * time.Second).Should(Equal([]string{"Completed"}))

		By("the transcript and summary are in PostgreSQL, the action items are to-dos")
		tr := transcriptOf(t, c)
		Expect(tr.Status).To(Equal("completed"))
		Expect(tr.SummaryStatus).To(Equal("completed"))
		Expect(tr.Text).To(Equal("Hi, my boiler is broken, please call me back."))
		Expect(tr.Language).To(Equal("en"))
		Expect(tr.Minutes).To(Equal(2))
		Expect(tr.RatedAmountPence).To(Equal(int64(10)))
		Expect(tr.Segments).To(Equal([]store.TranscriptSegment{{StartSeconds: 0, EndSeconds: 1.5, Speaker: "caller", Text: tr.Text}}))
		Expect(*tr.Summary).To(Equal("Summary: " + tr.Text))
		Expect(*tr.Intent).To(Equal("book_repair"))
		Expect(*tr.Sentiment).To(Equal("positive"))
		Expect(*tr.Urgency).To(Equal("normal"), "an urgency outside low/normal/high is stored as normal")
		Expect(tr.ActionItems).To(Equal([]string{"Call back", "Book the repair"}))
		Expect(*tr.CallbackNumber).To(Equal("+447700900456"))
		Expect(countRows(`SELECT count(*) FROM tasks WHERE call_id = $1 AND callback_e164 = '+447700900456' AND urgency = 'normal'`, c.ID)).To(Equal(2))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID)).To(Equal(1))
		var body string
		Expect(storetest.SQL(GinkgoT(), tj.store).QueryRow(ctx, `SELECT convert_from(body, 'UTF8') FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID).Scan(&body)).To(Succeed())
		Expect(body).To(ContainSubstring(`"gist":"Summary: Hi, my boiler is broken, please call me back."`))
		Expect(body).To(ContainSubstring(`"subject":"Book repair"`))
		Expect(body).To(ContainSubstring(`"transcript_api":"https://api.example.test/v1/recordings/` + c.RecordingPublicID + `/transcript"`))

		By("the money: 2 minutes at 5p, once")
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 990, LedgerSum: 990, LedgerEntries: 2}))

		By("the finished job stays until the TTL has passed, then leaves etcd")
		Consistently(func() error { return k8sClient.Get(ctx, jobKey(ch), &switchboardv1alpha1.TranscriptionJob{}) }).WithTimeout(time.Second).Should(Succeed())
		tj.clock.Step(tjTTL + time.Second)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, jobKey(ch), &switchboardv1alpha1.TranscriptionJob{}))
		}).WithTimeout(5 * time.Second).Should(BeTrue())
		Expect(transcriptOf(t, c).Status).To(Equal("completed"), "the result stays in PostgreSQL")
	})

	It("retries transient speech-to-text failures with backoff and completes", func() {
		t := funded(1000)
		c := recorded(t, "fail:2 Please send the invoice.", txtest.CallOptions{})
		ch := start(t, c)
		job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		Expect(job.Status.Attempts).To(Equal(int32(3)))
		Expect(transcriptOf(t, c).Text).To(Equal("Please send the invoice."))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(995)))
	})

	It("fails after the last attempt and refunds the charge", func() {
		t := funded(1000)
		txtest.Fund(GinkgoT(), tj.store, t.Account.ID, 0, store.AccountSettings{BundleMinutes: ptrTo(1)})
		c := recorded(t, "fail:99 never", txtest.CallOptions{Seconds: 150}) // 3 minutes: 1 bundle + 2 × 5p
		ch := start(t, c)
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 990, LedgerSum: 990, LedgerEntries: 2}))

		job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseFailed)
		Expect(job.Status.Attempts).To(Equal(int32(3)))
		Expect(job.Status.Refunded).To(BeTrue())
		Expect(job.Status.FailureReason).To(ContainSubstring("Speech to text failed 3 times"))
		ready := meta.FindStatusCondition(job.Status.Conditions, switchboardv1alpha1.ConditionReady)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Reason).To(Equal(switchboardv1alpha1.ReasonAttemptsExceeded))
		Expect(meta.IsStatusConditionTrue(job.Status.Conditions, switchboardv1alpha1.ConditionRefunded)).To(BeTrue())
		Eventually(func(g Gomega) {
			evs := kubeEventsAbout(g, job)
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Type).To(Equal(corev1.EventTypeWarning))
			g.Expect(evs[0].Reason).To(Equal("Failed"))
			g.Expect(evs[0].Note).To(ContainSubstring("Speech to text failed 3 times"))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 1000, LedgerSum: 1000, BundleMinutes: 1, LedgerEntries: 3}))
		Expect(countRows(`SELECT count(*) FROM ledger_entries WHERE account_id = $1 AND type = 'refund' AND amount_pence = 10 AND reference = $2`,
			t.Account.ID, ch.PublicID)).To(Equal(1))
		tr := transcriptOf(t, c)
		Expect(tr.Status).To(Equal("failed"))
		Expect(tr.SummaryStatus).To(Equal("failed"))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID)).To(BeZero())
	})

	It("fails at once and refunds when the audio is missing or refused", func() {
		t := funded(1000)
		missing := txtest.RecordedCall(GinkgoT(), tj.store, t.Account.ID, txtest.CallOptions{}) // no audio stored
		refused := recorded(t, "refuse this", txtest.CallOptions{})
		chMissing, chRefused := start(t, missing), start(t, refused)
		for ch, reason := range map[*store.TranscriptionCharge]string{chMissing: switchboardv1alpha1.ReasonRecordingMissing, chRefused: switchboardv1alpha1.ReasonEngineRefused} {
			job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseFailed)
			Expect(job.Status.Attempts).To(Equal(int32(1)))
			Expect(meta.FindStatusCondition(job.Status.Conditions, switchboardv1alpha1.ConditionReady).Reason).To(Equal(reason))
			Expect(job.Status.Refunded).To(BeTrue())
		}
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 1000, LedgerSum: 1000, LedgerEntries: 5}))
	})

	It("fails and refunds a recording with no recognised speech, which may then be transcribed again", func() {
		t := funded(1000)
		silent := recorded(t, "", txtest.CallOptions{})
		ch := start(t, silent)
		job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseFailed)
		Expect(meta.FindStatusCondition(job.Status.Conditions, switchboardv1alpha1.ConditionReady).Reason).To(Equal(switchboardv1alpha1.ReasonNoSpeech))
		Expect(job.Status.Refunded).To(BeTrue())
		Expect(transcriptOf(t, silent).Status).To(Equal("failed"))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 1000, LedgerSum: 1000, LedgerEntries: 3}))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, silent.ID)).To(BeZero())
		res, err := service().Start(ctx, store.TranscribeRequest{AccountID: t.Account.ID, CallPublicID: silent.PublicID})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(store.TranscribeStarted))
	})

	It("completes with summary_status failed when no summary can be made, still announcing the transcript", func() {
		t := funded(1000)
		c := recorded(t, "no summary for this one", txtest.CallOptions{})
		ch := start(t, c)
		job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		Expect(job.Status.SummaryAttempts).To(Equal(int32(3)))
		sum := meta.FindStatusCondition(job.Status.Conditions, switchboardv1alpha1.ConditionSummarized)
		Expect(sum.Status).To(Equal(metav1.ConditionFalse))
		Expect(sum.Reason).To(Equal(switchboardv1alpha1.ReasonSummaryFailed))
		tr := transcriptOf(t, c)
		Expect(tr.Status).To(Equal("completed"))
		Expect(tr.SummaryStatus).To(Equal("failed"))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID)).To(Equal(1))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(995)), "a transcript was delivered: no refund")
	})

	It("does not emit transcript.ready for a voicemail", func() {
		t := funded(1000)
		c := recorded(t, "Voicemail: call me", txtest.CallOptions{Kind: "voicemail"})
		ch := start(t, c)
		eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		Expect(transcriptOf(t, c).SummaryStatus).To(Equal("completed"))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID)).To(BeZero())
	})

	It("creates the job a crash left uncreated (the sweeper), once, without charging again", func() {
		t := funded(1000)
		c := recorded(t, "Swept up.", txtest.CallOptions{})
		// The charge committed, then the process died before creating the job.
		res, err := tj.store.StartTranscription(ctx, store.TranscribeRequest{AccountID: t.Account.ID, CallPublicID: c.PublicID, Now: tj.clock.Now()})
		Expect(err).NotTo(HaveOccurred())
		ch := res.Charge
		sweeper := &transcription.JobSweeper{Service: service(), Clock: tj.clock, Grace: 30 * time.Second}

		By("a young charge is left to the request that made it")
		made, err := sweeper.SweepOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(made).To(BeZero())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, jobKey(ch), &switchboardv1alpha1.TranscriptionJob{}))).To(BeTrue())

		By("a request for the same call meanwhile charges nothing")
		again, err := tj.store.StartTranscription(ctx, store.TranscribeRequest{AccountID: t.Account.ID, CallPublicID: c.PublicID, Now: tj.clock.Now()})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Outcome).To(Equal(store.TranscribeExisting))

		By("after 30 s the sweeper creates it")
		tj.clock.Step(31 * time.Second)
		made, err = sweeper.SweepOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(made).To(BeNumerically(">=", 1))
		eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		made, err = sweeper.SweepOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(made).To(BeZero())
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(995)))
		Expect(transcriptOf(t, c).Text).To(Equal("Swept up."))
	})

	It("fails a job whose charge does not exist, touching no money", func() {
		t := funded(1000)
		ch := &store.TranscriptionCharge{PublicID: "chg_doesnotexist", AccountPublicID: t.Account.PublicID, CallPublicID: "call_x",
			RecordingPublicID: "rec_x", Minutes: 1, AmountPence: 5}
		Expect(transcription.EnsureJob(ctx, k8sClient, *ch)).To(Succeed())
		job := eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseFailed)
		Expect(meta.FindStatusCondition(job.Status.Conditions, switchboardv1alpha1.ConditionReady).Reason).To(Equal(switchboardv1alpha1.ReasonInvalidSpec))
		Expect(job.Status.Refunded).To(BeFalse())
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 1000, LedgerSum: 1000, LedgerEntries: 1}))
	})

	It("ignores a job outside its account's namespace", func() {
		ns := newNamespace()
		job := &switchboardv1alpha1.TranscriptionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray"},
			Spec: switchboardv1alpha1.TranscriptionJobSpec{AccountID: "acct_other", CallPublicID: "call_x", RecordingPublicID: "rec_x", ChargeID: "chg_x", ChargedMinutes: 1}}
		Expect(k8sClient.Create(ctx, job)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "stray"}, job)).To(Succeed())
			g.Expect(job.Status.Phase).To(BeEmpty())
		}).WithTimeout(time.Second).Should(Succeed())
	})
})

var _ = Describe("Automatic transcription", func() {
	It("transcribes a new recorded call while the account has an auto-transcribe key, never in privacy mode, and stops when the key is revoked", func() {
		t := funded(1000)
		svc := service()
		plain := recorded(t, "Auto one.", txtest.CallOptions{})

		By("without an auto-transcribe key nothing happens")
		_, err := storetest.SQL(GinkgoT(), tj.store).Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE account_id = $1`, t.Account.ID) // the all-permission owner key
		Expect(err).NotTo(HaveOccurred())
		res, err := svc.AutoTranscribe(ctx, t.Account.ID, plain.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(store.TranscribeSkipped))
		Expect(res.SkipReason).To(Equal(store.SkipNoAutoTranscribeKey))

		By("with one, the call is charged and transcribed")
		apitest.NewKey(GinkgoT(), tj.store, t.Owner.ID, "auto-transcribe")
		res, err = svc.AutoTranscribe(ctx, t.Account.ID, plain.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(store.TranscribeStarted))
		Expect(res.Charge.Automatic).To(BeTrue())
		eventuallyPhase(res.Charge, switchboardv1alpha1.TranscriptionJobPhaseCompleted)
		Expect(transcriptOf(t, plain).Text).To(Equal("Auto one."))

		By("never on a number in privacy mode, nor for a voicemail")
		private := recorded(t, "Private.", txtest.CallOptions{PrivacyMode: true})
		res, err = svc.AutoTranscribe(ctx, t.Account.ID, private.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.SkipReason).To(Equal(store.SkipPrivacyMode))
		vm := recorded(t, "Voicemail.", txtest.CallOptions{Kind: "voicemail"})
		res, err = svc.AutoTranscribe(ctx, t.Account.ID, vm.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.SkipReason).To(Equal(store.SkipNotCallRecording))

		By("revoking the key stops it")
		var keyID string
		Expect(storetest.SQL(GinkgoT(), tj.store).QueryRow(ctx, `SELECT public_id FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`,
			t.Account.ID).Scan(&keyID)).To(Succeed())
		Expect(tj.store.RevokeAPIKey(ctx, keyID, tj.clock.Now())).To(Succeed())
		later := recorded(t, "After revocation.", txtest.CallOptions{})
		res, err = svc.AutoTranscribe(ctx, t.Account.ID, later.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.SkipReason).To(Equal(store.SkipNoAutoTranscribeKey))

		Expect(countRows(`SELECT count(*) FROM transcription_charges WHERE account_id = $1`, t.Account.ID)).To(Equal(1))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(995)))
	})

	It("leaves the call untranscribed and notifies the owners when the account cannot pay", func() {
		t := funded(3)
		apitest.NewKey(GinkgoT(), tj.store, t.Owner.ID, "auto-transcribe")
		c := recorded(t, "Too dear.", txtest.CallOptions{Seconds: 60, From: "+447700900999"})
		res, err := service().AutoTranscribe(ctx, t.Account.ID, c.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Outcome).To(Equal(store.TranscribeRefused))
		_, err = tj.store.GetTranscript(ctx, t.Account.ID, c.RecordingID)
		Expect(err).To(MatchError(store.ErrNotFound))
		list, _, unread, err := tj.store.ListNotifications(ctx, t.Account.ID, t.Owner.ID, false, 10, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(unread).To(Equal(1))
		Expect(list[0].Type).To(Equal(transcription.NotificationTranscriptionNotStarted))
		Expect(list[0].Title).To(Equal("A call was not transcribed"))
		Expect(list[0].Body).To(Equal("The call from +447700900999 was not transcribed automatically: The prepaid balance (£0.03) cannot cover this transcription (1 minute from the balance at 5p a minute = £0.05). Top up the balance and try again."))
		Expect(list[0].URL).To(Equal("https://app.example.test/calls/" + c.PublicID))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(3)))
	})
})
