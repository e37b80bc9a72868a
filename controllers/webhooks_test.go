/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	smtpserver "github.com/emersion/go-smtp"
	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// ---- test doubles that are real servers ----

// mailbox is a real SMTP server (go-smtp) started in the test.
type mailbox struct {
	addr string
	mu   sync.Mutex
	msgs []string
	rcpt [][]string
}

type smtpSession struct {
	box *mailbox
	to  []string
}

func (s *smtpSession) Reset()                                     {}
func (s *smtpSession) Logout() error                              { return nil }
func (s *smtpSession) Mail(string, *smtpserver.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, _ *smtpserver.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.box.mu.Lock()
	defer s.box.mu.Unlock()
	s.box.msgs = append(s.box.msgs, string(b))
	s.box.rcpt = append(s.box.rcpt, s.to)
	return nil
}

func startMailbox() *mailbox {
	GinkgoHelper()
	box := &mailbox{}
	srv := smtpserver.NewServer(smtpserver.BackendFunc(func(*smtpserver.Conn) (smtpserver.Session, error) {
		return &smtpSession{box: box}, nil
	}))
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	box.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(func() { _ = srv.Close() })
	return box
}

func (b *mailbox) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

type received struct {
	header    http.Header
	body      []byte
	cancelled bool
	path      string
	at        time.Time
}

// receiver is a real HTTPS endpoint; status answers each request, hang holds requests
// until released or cancelled by the sender.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	hang   atomic.Bool
	// delay holds each answer this long (a slow receiver).
	delay  atomic.Int64
	mu     sync.Mutex
	reqs   []received
	inHang chan struct{}
	free   chan struct{}
}

func startReceiver() *receiver {
	GinkgoHelper()
	r := &receiver{inHang: make(chan struct{}, 100), free: make(chan struct{})}
	r.status.Store(204)
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rec := received{header: req.Header.Clone(), body: body, path: req.URL.Path, at: time.Now()}
		if d := time.Duration(r.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-req.Context().Done():
			}
		}
		if r.hang.Load() {
			r.inHang <- struct{}{}
			select {
			case <-r.free:
			case <-req.Context().Done():
				rec.cancelled = true
			}
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, rec)
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
	}))
	DeferCleanup(func() {
		r.hang.Store(false)
		close(r.free)
		r.srv.Close()
	})
	return r
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

func (r *receiver) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(r.srv.Certificate())
	return p
}

// ---- the environment of one spec ----

type whEnv struct {
	st      *store.Store
	clk     *clocktesting.FakeClock
	mail    *mailbox
	tenant  apitest.Tenant
	ns      string
	rcv     *receiver
	timeout time.Duration
	// blockPrivate leaves the address guard on (the default everywhere but tests).
	blockPrivate bool
	stop         func()
	// cached reads through the running manager's cache.
	cached client.Reader
	// maxLivePerEndpoint is the dispatcher's MaxLivePerEndpoint (0: its default).
	maxLivePerEndpoint int
	// firstMaxWaiting is the engine's MaxWaiting (0: its default).
	firstMaxWaiting int
	// probeInterval is the engine's ProbeInterval (0: its default).
	probeInterval time.Duration
	// noRequeueCap leaves the reconcilers' timers uncapped (MaxRequeue 0, as serve runs
	// them): a delivery waiting for its retry is looked at again only when something wakes it.
	noRequeueCap bool
	// dispatcherClient, when set, wraps the client the dispatcher creates deliveries with.
	dispatcherClient func(client.Client) client.Client
	// pollInterval is the dispatcher's Interval (0: 50 ms).
	pollInterval time.Duration
	// dispatcherStore, when set, wraps the store the dispatcher claims with; stopping is
	// closed when the manager is told to stop.
	dispatcherStore func(s engine.Store, stopping <-chan struct{}) engine.Store
}

// claimRunsOn is a store whose first outbox claim waits for the manager to stop and, when its
// context ends then, runs on anyway and reports the context's error: what PostgreSQL
// does with a statement whose cancel request arrives before it starts.
type claimRunsOn struct {
	engine.Store
	stopping <-chan struct{}
	claiming chan struct{}
	once     sync.Once
}

func (c *claimRunsOn) ClaimFairly(ctx context.Context, fc store.FairClaim, now time.Time, lease time.Duration) (store.ClaimedEvents, error) {
	first := false
	c.once.Do(func() { first = true })
	if !first {
		return c.Store.ClaimFairly(ctx, fc, now, lease)
	}
	close(c.claiming)
	<-c.stopping
	// The manager ends its runnables' contexts a moment after its own; a claim whose
	// context does not end (it is not cut off) goes on after the wait.
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	if ctx.Err() != nil {
		_, _ = c.Store.ClaimFairly(context.Background(), fc, now, lease)
		return store.ClaimedEvents{}, ctx.Err()
	}
	return c.Store.ClaimFairly(ctx, fc, now, lease)
}

// slowCreates is a real client whose creations of one endpoint's deliveries wait for
// release (or their context).
type slowCreates struct {
	client.Client
	endpoint string
	waiting  atomic.Int32
	release  chan struct{}
}

func (s *slowCreates) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if d, ok := obj.(*switchboardv1alpha1.WebhookDelivery); ok && d.Spec.EndpointName == s.endpoint {
		s.waiting.Add(1)
		defer s.waiting.Add(-1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Client.Create(ctx, obj, opts...)
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func newWebhookEnv() *whEnv {
	GinkgoHelper()
	e := &whEnv{clk: clocktesting.NewFakeClock(t0), timeout: 2 * time.Second}
	e.st = storetest.NewStore(GinkgoT())
	e.tenant = apitest.NewTenant(GinkgoT(), e.st, plans.Business)
	e.mail = startMailbox()
	e.rcv = startReceiver()
	e.ns = tenancy.Namespace(e.tenant.Account.PublicID)
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns,
		Labels: map[string]string{switchboardv1alpha1.AccountLabel: e.tenant.Account.PublicID}}})).To(Succeed())
	e.start()
	DeferCleanup(func() {
		e.stop()
		_ = k8sClient.DeleteAllOf(ctx, &switchboardv1alpha1.WebhookDelivery{}, client.InNamespace(e.ns))
		_ = k8sClient.DeleteAllOf(ctx, &switchboardv1alpha1.WebhookEndpoint{}, client.InNamespace(e.ns))
	})
	return e
}

// start runs a fresh controller manager with the webhook controllers and the dispatcher.
func (e *whEnv) start() {
	GinkgoHelper()
	m, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Cache: CacheOptions(), Controller: testControllers})
	Expect(err).NotTo(HaveOccurred())
	e.cached = m.GetCache()
	sender := send.NewSender(send.SenderConfig{AllowPrivateTargets: !e.blockPrivate, RootCAs: e.rcv.pool(), Timeout: e.timeout})
	maxRequeue := 100 * time.Millisecond
	if e.noRequeueCap {
		maxRequeue = 0
	}
	Expect((&WebhookEndpointReconciler{Client: m.GetClient(), Store: e.st, Clock: e.clk,
		Mailer: send.SMTPMailer{Addr: e.mail.addr}, MaxRequeue: maxRequeue,
		Recorder: m.GetEventRecorder("switchboard-webhooks")}).SetupWithManager(m)).To(Succeed())
	eng, err := engine.NewEngine(ctx, m, engine.EngineOptions{Sender: sender, Store: e.st, Clock: e.clk, Log: GinkgoLogr})
	Expect(err).NotTo(HaveOccurred())
	eng.First.MaxWaiting = e.firstMaxWaiting
	eng.First.ProbeInterval = e.probeInterval
	Expect((&WebhookDeliveryReconciler{Client: m.GetClient(), Store: e.st, Clock: e.clk, Engine: eng,
		MaxRequeue: maxRequeue, Recorder: m.GetEventRecorder("switchboard-webhooks")}).SetupWithManager(ctx, m)).To(Succeed())
	mctx, mcancel := context.WithCancel(ctx)
	dispatcherClient := m.GetClient()
	if e.dispatcherClient != nil {
		dispatcherClient = e.dispatcherClient(dispatcherClient)
	}
	var dispatcherStore engine.Store = e.st
	if e.dispatcherStore != nil {
		dispatcherStore = e.dispatcherStore(e.st, mctx.Done())
	}
	poll := e.pollInterval
	if poll == 0 {
		poll = 50 * time.Millisecond
	}
	Expect(m.Add(&engine.Dispatcher{Client: dispatcherClient, Reader: m.GetAPIReader(), Store: dispatcherStore, Clock: e.clk,
		Interval: poll, Engine: eng, MaxLivePerEndpoint: e.maxLivePerEndpoint,
		Log: GinkgoLogr})).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(m.Start(mctx)).To(Succeed())
	}()
	Expect(m.GetCache().WaitForCacheSync(mctx)).To(BeTrue())
	e.stop = func() {
		mcancel()
		Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed())
	}
}

func (e *whEnv) restart() {
	GinkgoHelper()
	e.stop()
	e.start()
}

// otherAccount is a second account served by the same manager: its own tenant and namespace.
func (e *whEnv) otherAccount() *whEnv {
	GinkgoHelper()
	o := *e
	o.tenant = apitest.NewTenant(GinkgoT(), e.st, plans.Business)
	o.ns = tenancy.Namespace(o.tenant.Account.PublicID)
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ns,
		Labels: map[string]string{switchboardv1alpha1.AccountLabel: o.tenant.Account.PublicID}}})).To(Succeed())
	DeferCleanup(func() {
		_ = k8sClient.DeleteAllOf(ctx, &switchboardv1alpha1.WebhookDelivery{}, client.InNamespace(o.ns))
		_ = k8sClient.DeleteAllOf(ctx, &switchboardv1alpha1.WebhookEndpoint{}, client.InNamespace(o.ns))
	})
	return &o
}

// endpoint creates an endpoint the way the API does: with a Secret it owns.
func (e *whEnv) endpoint(name string, evts ...switchboardv1alpha1.WebhookEventType) (*switchboardv1alpha1.WebhookEndpoint, string) {
	GinkgoHelper()
	return e.endpointAt(e.rcv, name, evts...)
}

func (e *whEnv) endpointAt(rcv *receiver, name string, evts ...switchboardv1alpha1.WebhookEventType) (*switchboardv1alpha1.WebhookEndpoint, string) {
	GinkgoHelper()
	if len(evts) == 0 {
		evts = []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded}
	}
	ep := &switchboardv1alpha1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{switchboardv1alpha1.AccountLabel: e.tenant.Account.PublicID}},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: e.tenant.Account.PublicID, DisplayName: "CRM " + name, URL: rcv.srv.URL + "/hooks",
			Events: evts, SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: send.SecretName(name)}},
	}
	Expect(k8sClient.Create(ctx, ep)).To(Succeed())
	secret := send.NewSecret()
	Expect(k8sClient.Create(ctx, send.NewSigningSecret(ep, send.SecretName(name), secret))).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return ep, secret
}

// queuedWhileStopped creates an endpoint, stops the manager and queues n call.ended events
// with no dispatcher to hear their commits.
func (e *whEnv) queuedWhileStopped(name string, n int) *switchboardv1alpha1.WebhookEndpoint {
	GinkgoHelper()
	ep, _ := e.endpoint(name)
	e.stop()
	for range n {
		e.event(events.CallEnded)
	}
	return ep
}

// expectSucceeded waits for n requests at the receiver and n succeeded history rows of ep.
func (e *whEnv) expectSucceeded(ep *switchboardv1alpha1.WebhookEndpoint, n int) {
	GinkgoHelper()
	Eventually(func() int { return len(e.rcv.all()) }).WithTimeout(20 * time.Second).Should(Equal(n))
	Eventually(func(g Gomega) {
		var succeeded int
		g.Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_history
			WHERE account_id = $1 AND endpoint_public_id = $2 AND status = 'succeeded'`, e.tenant.Account.ID, ep.Name).Scan(&succeeded)).To(Succeed())
		g.Expect(succeeded).To(Equal(n))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// event queues an outbox event as the platform ingestion does.
func (e *whEnv) event(typ string) uuid.UUID {
	GinkgoHelper()
	id := uuid.New()
	Expect(e.st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.EnqueueEvents(ctx, []events.Event{{ID: id, AccountID: e.tenant.Account.ID, Type: typ,
			Body: []byte(fmt.Sprintf(`{"event":%q,"id":%q}`, typ, id)), CreatedAt: e.clk.Now()}})
		return err
	})).To(Succeed())
	return id
}

type historyRow struct {
	Status   string
	Attempts int
	Code     int
	Err      string
	Endpoint string
}

func (e *whEnv) history(eventID uuid.UUID) []historyRow {
	rows, err := storetest.SQL(GinkgoT(), e.st).Query(ctx, `SELECT status, attempts, coalesce(response_code, 0), coalesce(last_error, ''), endpoint_public_id
		FROM webhook_delivery_history WHERE event_id = $1 ORDER BY id`, eventID)
	Expect(err).NotTo(HaveOccurred())
	var out []historyRow
	for rows.Next() {
		var h historyRow
		Expect(rows.Scan(&h.Status, &h.Attempts, &h.Code, &h.Err, &h.Endpoint)).To(Succeed())
		out = append(out, h)
	}
	return out
}

// attemptRow is an attempt kept of a delivery (webhook_delivery_attempts).
type attemptRow struct {
	Attempt int
	Code    int
	Next    time.Time // zero: no retry followed
}

func (e *whEnv) attempts(eventID uuid.UUID) []attemptRow {
	rows, err := storetest.SQL(GinkgoT(), e.st).Query(ctx, `SELECT attempt, coalesce(response_code, 0), coalesce(next_attempt_at, 'epoch')
		FROM webhook_delivery_attempts WHERE event_id = $1 ORDER BY created_at`, eventID)
	Expect(err).NotTo(HaveOccurred())
	var out []attemptRow
	for rows.Next() {
		var a attemptRow
		Expect(rows.Scan(&a.Attempt, &a.Code, &a.Next)).To(Succeed())
		if a.Next.Equal(time.Unix(0, 0)) {
			a.Next = time.Time{}
		}
		a.Next = a.Next.UTC()
		out = append(out, a)
	}
	return out
}

// live returns the live delivery resources of an event.
func (e *whEnv) live(eventID uuid.UUID) []switchboardv1alpha1.WebhookDelivery {
	list := &switchboardv1alpha1.WebhookDeliveryList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(e.ns), client.MatchingLabels{send.LabelEventID: eventID.String()})).To(Succeed())
	return list.Items
}

func (e *whEnv) waitRetrying(eventID uuid.UUID, attempts int32) switchboardv1alpha1.WebhookDelivery {
	GinkgoHelper()
	var d switchboardv1alpha1.WebhookDelivery
	Eventually(func(g Gomega) {
		items := e.live(eventID)
		g.Expect(items).To(HaveLen(1))
		d = items[0]
		g.Expect(d.Status.Attempts).To(Equal(attempts))
		g.Expect(d.Status.Phase).To(Equal(switchboardv1alpha1.WebhookDeliveryPhaseRetrying))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return d
}

func verifyWith(secret string, at time.Time, r received) error {
	return webhookverify.Verifier{Secret: secret, Now: func() time.Time { return at }}.Verify(r.header, r.body)
}

func (e *whEnv) patchEndpoint(ep *switchboardv1alpha1.WebhookEndpoint, mutate func(*switchboardv1alpha1.WebhookEndpoint)) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
	base := ep.DeepCopy()
	mutate(ep)
	Expect(k8sClient.Patch(ctx, ep, client.MergeFrom(base))).To(Succeed())
}

// ---- specs ----

var _ = Describe("Webhook delivery", func() {
	var e *whEnv
	BeforeEach(func() { e = newWebhookEnv() })

	It("delivers an outbox event signed, with the spec's headers, then keeps it only in the history", func() {
		ep, secret := e.endpoint("whep-crm")
		_, _ = e.endpoint("whep-voicemail", switchboardv1alpha1.EventVoicemailReceived)
		id := e.event(events.CallEnded)

		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		reqs := e.rcv.all()
		Expect(reqs).To(HaveLen(1), "only the subscribed endpoint receives it")
		r := reqs[0]
		Expect(r.header.Get("Content-Type")).To(Equal("application/json"))
		Expect(r.header.Get("User-Agent")).To(Equal("Service-Webhooks/1"))
		Expect(r.header.Get("X-Service-Event")).To(Equal("call.ended"))
		Expect(r.header.Get("X-Service-Delivery")).To(Equal(id.String()))
		Expect(r.header.Get("X-Service-Timestamp")).To(Equal(fmt.Sprint(t0.Unix())))
		Expect(string(r.body)).To(Equal(fmt.Sprintf(`{"event":"call.ended","id":%q}`, id)))
		Expect(verifyWith(secret, t0.Add(time.Minute), r)).To(Succeed())
		Expect(verifyWith("whsec_wrong", t0, r)).To(MatchError(webhookverify.ErrBadSignature))

		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).Should(BeEmpty(), "etcd holds only live deliveries")
		// The dispatcher marks the event when its batch's transaction commits, which may be a
		// moment after the delivery itself finished.
		Eventually(func(g Gomega) {
			var dispatched *time.Time
			g.Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT dispatched_at FROM events WHERE id = $1`, id).Scan(&dispatched)).To(Succeed())
			g.Expect(dispatched).NotTo(BeNil())
		}).Should(Succeed())
		// The endpoint shows the last answer; it is not failing.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.LastResponseCode).To(Equal(int32(204)))
			g.Expect(ep.Status.FailingSince).To(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("delivers an event queued for one endpoint (a test event) to that endpoint only, whatever its subscriptions", func() {
		ep, _ := e.endpoint("whep-crm", switchboardv1alpha1.EventVoicemailReceived)
		_, _ = e.endpoint("whep-other") // subscribes to call.ended, and is not the target
		id := uuid.New()
		Expect(e.st.InTx(ctx, func(tx *store.Tx) error {
			return tx.EnqueueEventFor(ctx, events.Event{ID: id, AccountID: e.tenant.Account.ID, Type: events.CallEnded,
				Body: []byte(fmt.Sprintf(`{"event":"test","id":%q}`, id)), CreatedAt: e.clk.Now()}, ep.Name)
		})).To(Succeed())

		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		reqs := e.rcv.all()
		Expect(reqs).To(HaveLen(1), "only the endpoint it was queued for receives it")
		Expect(reqs[0].header.Get("X-Service-Delivery")).To(Equal(id.String()))
		Eventually(func(g Gomega) {
			var dispatched *time.Time
			g.Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT dispatched_at FROM events WHERE id = $1`, id).Scan(&dispatched)).To(Succeed())
			g.Expect(dispatched).NotTo(BeNil())
		}).Should(Succeed())

		// A resend is queued the same way: a fresh delivery, same event id and body, to that endpoint only.
		Expect(e.st.InTx(ctx, func(tx *store.Tx) error {
			return tx.EnqueueResend(ctx, e.tenant.Account.ID, id, ep.Name, send.DeliveryName(id.String(), ep.Name, ""),
				uuid.New(), e.clk.Now())
		})).To(Succeed())
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(Equal([]historyRow{
			{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}, {Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		reqs = e.rcv.all()
		Expect(reqs).To(HaveLen(2))
		Expect(reqs[1].header.Get("X-Service-Delivery")).To(Equal(id.String()))
		Expect(reqs[1].body).To(Equal(reqs[0].body))
	})

	It("makes a first attempt that succeeds without a WebhookDelivery, and turns one that fails into one, its attempt counted", func() {
		ep, _ := e.endpoint("whep-direct")
		wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
		Expect(err).NotTo(HaveOccurred())
		watch, err := wc.Watch(ctx, &switchboardv1alpha1.WebhookDeliveryList{}, client.InNamespace(e.ns))
		Expect(err).NotTo(HaveOccurred())
		defer watch.Stop()

		id := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		Consistently(watch.ResultChan()).WithTimeout(500*time.Millisecond).ShouldNot(Receive(), "no resource was created")
		// The event left the outbox with its history row.
		Eventually(func() (int64, error) { n, _, err := e.st.OutboxBacklog(ctx); return n, err }).WithTimeout(5 * time.Second).Should(BeZero())

		e.rcv.status.Store(500)
		failing := e.event(events.CallEnded)
		d := e.waitRetrying(failing, 1)
		Expect(d.Status.NextAttemptAt.Time).To(BeTemporally("==", t0.Add(time.Minute)))
		Expect(d.Annotations).To(HaveKeyWithValue(send.AnnotationFirstAttempt, t0.Format(time.RFC3339Nano)))
		Consistently(func() int { return len(e.rcv.all()) }).WithTimeout(500*time.Millisecond).Should(Equal(2),
			"the controller waits for the retry: the engine's attempt is not made again")
		e.rcv.status.Store(200)
		e.clk.Step(time.Minute)
		Eventually(func() []historyRow { return e.history(failing) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 2, Code: 200, Endpoint: ep.Name}}))
		By("each attempt of the delivery that retried is kept; the one that succeeded first time wrote none")
		Expect(e.attempts(failing)).To(Equal([]attemptRow{{Attempt: 1, Code: 500, Next: t0.Add(time.Minute).UTC()}, {Attempt: 2, Code: 200}}))
		Expect(e.attempts(id)).To(BeEmpty())
	})

	It("keeps a burst to one fast endpoint as first attempts, each sent once, however few may wait", func() {
		e.stop()
		e.firstMaxWaiting = 4 // far below the claim size: the endpoint's room must pace the claims
		e.start()
		ep, _ := e.endpoint("whep-burst")
		wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
		Expect(err).NotTo(HaveOccurred())
		watch, err := wc.Watch(ctx, &switchboardv1alpha1.WebhookDeliveryList{}, client.InNamespace(e.ns))
		Expect(err).NotTo(HaveOccurred())
		defer watch.Stop()

		const n = 60
		ids := make([]uuid.UUID, 0, n)
		for range n {
			ids = append(ids, e.event(events.CallEnded))
		}
		Eventually(func() int { return len(e.rcv.all()) }).WithTimeout(30 * time.Second).Should(Equal(n))
		Consistently(func() int { return len(e.rcv.all()) }).WithTimeout(500*time.Millisecond).Should(Equal(n), "nothing is sent twice")
		sent := map[string]int{}
		for _, r := range e.rcv.all() {
			sent[r.header.Get("X-Service-Delivery")]++
		}
		for _, id := range ids {
			Expect(sent[id.String()]).To(Equal(1), "event %s", id)
			Eventually(func() []historyRow { return e.history(id) }).Should(
				Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		}
		Expect(watch.ResultChan()).NotTo(Receive(), "no delivery went to the controller")
	})

	It("claims an account's waiting events as soon as its share has room, without waiting for the poll", func() {
		const n = 40
		ep := e.queuedWhileStopped("whep-share", n)
		// Every event is committed before the dispatcher starts, so no commit wakes it; the
		// account may hold 4 events at once, and the poll is an hour away.
		e.firstMaxWaiting = 4
		e.pollInterval = time.Hour
		e.start()
		e.expectSucceeded(ep, n)
	})

	It("gives back a claim that returns after the dispatcher was told to stop, so its events wait for no lease", func() {
		const n = 3
		ep := e.queuedWhileStopped("whep-stopping", n)
		claiming := make(chan struct{})
		e.dispatcherStore = func(s engine.Store, stopping <-chan struct{}) engine.Store {
			return &claimRunsOn{Store: s, stopping: stopping, claiming: claiming}
		}
		e.pollInterval = time.Hour
		e.start()
		Eventually(claiming).Should(BeClosed())
		e.stop()
		Expect(e.rcv.all()).To(BeEmpty(), "nothing is sent once the dispatcher is stopping")
		var claimed int
		Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT count(*) FROM events
			WHERE account_id = $1 AND claimed_until IS NOT NULL`, e.tenant.Account.ID).Scan(&claimed)).To(Succeed())
		Expect(claimed).To(BeZero(), "the claim made while stopping was given back")
		// The fake clock never reaches the lease: only a claim given back lets the next
		// dispatcher take the events.
		e.dispatcherStore = nil
		e.start()
		e.expectSucceeded(ep, n)
	})

	It("holds a rate-limited endpoint to its rate, first attempts and the controller's alike, and waiting is no failure", func() {
		e.stop()
		e.firstMaxWaiting = 3 // most deliveries go to the controller: both paths are held
		e.start()
		ep, _ := e.endpoint("whep-limited")
		e.patchEndpoint(ep, func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.RateLimit = ptr.To[int32](5) })
		const n = 15
		ids := make([]uuid.UUID, 0, n)
		for range n {
			ids = append(ids, e.event(events.CallEnded))
		}
		Eventually(func() int { return len(e.rcv.all()) }).WithTimeout(30 * time.Second).Should(Equal(n))
		reqs := e.rcv.all()
		slices.SortFunc(reqs, func(a, b received) int { return a.at.Compare(b.at) })
		// A token bucket of one: at most 5 × T + 1 in any T seconds.
		for i := range reqs {
			inSecond := 0
			for _, r := range reqs[i:] {
				if r.at.Sub(reqs[i].at) < time.Second {
					inSecond++
				}
			}
			Expect(inSecond).To(BeNumerically("<=", 6), "deliveries within a second from the %dth", i+1)
		}
		Expect(reqs[n-1].at.Sub(reqs[0].at)).To(BeNumerically(">=", 2500*time.Millisecond), "15 at 5 a second")
		for _, id := range ids {
			Eventually(func() []historyRow { return e.history(id) }).WithTimeout(10*time.Second).Should(
				Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}), "held back, not failed")
		}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		Expect(ep.Status.FailingSince).To(BeNil())
	})

	It("retries after 1 minute, 5 minutes, 30 minutes, 2 hours and 10 hours, then fails", func() {
		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-down")
		id := e.event(events.CallEnded)
		at := t0
		for i, delay := range send.RetryDelays {
			d := e.waitRetrying(id, int32(i+1))
			Expect(d.Status.NextAttemptAt.Time).To(BeTemporally("==", at.Add(delay)), "retry %d", i+1)
			Expect(d.Status.LastResponseCode).To(Equal(int32(500)))
			Expect(d.Status.LastError).To(ContainSubstring("HTTP 500"))
			// Not before it is due.
			e.clk.Step(delay - time.Second)
			Consistently(func() int { return len(e.rcv.all()) }).WithTimeout(300 * time.Millisecond).Should(Equal(i + 1))
			e.clk.Step(time.Second)
			at = at.Add(delay)
		}
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "failed", Attempts: 6, Code: 500, Err: "HTTP 500: the endpoint did not answer with a 2xx status", Endpoint: ep.Name}}))
		Expect(e.rcv.all()).To(HaveLen(6))
		want := []attemptRow{}
		sent := t0
		for i, delay := range send.RetryDelays {
			want = append(want, attemptRow{Attempt: i + 1, Code: 500, Next: sent.Add(delay).UTC()})
			sent = sent.Add(delay)
		}
		Expect(e.attempts(id)).To(Equal(append(want, attemptRow{Attempt: 6, Code: 500})), "every attempt kept, each with its retry's time")
		for _, r := range e.rcv.all() {
			Expect(r.header.Get("X-Service-Delivery")).To(Equal(id.String()), "the same event id on every retry")
		}
		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).WithTimeout(20 * time.Second).Should(BeEmpty())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		Expect(ep.Status.FailingSince.Time).To(BeTemporally("==", t0))
		By("kubectl describe shows the failure on the endpoint")
		Eventually(func(g Gomega) {
			evs := kubeEventsAbout(g, ep)
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Type).To(Equal(corev1.EventTypeWarning))
			g.Expect(evs[0].Reason).To(Equal("DeliveryFailed"))
			g.Expect(evs[0].Note).To(ContainSubstring(id.String()))
			g.Expect(evs[0].Note).To(ContainSubstring("after 6 attempts"))
			g.Expect(evs[0].Related).NotTo(BeNil())
			g.Expect(evs[0].Related.Kind).To(Equal("WebhookDelivery"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("treats a redirect and a slow answer as failures", func() {
		e.rcv.status.Store(302)
		_, _ = e.endpoint("whep-redirect")
		id := e.event(events.CallEnded)
		d := e.waitRetrying(id, 1)
		Expect(d.Status.LastResponseCode).To(Equal(int32(302)))
		Expect(d.Status.LastError).To(ContainSubstring("redirects are not followed"))

		e.stop()
		e.timeout = 300 * time.Millisecond
		e.start()
		e.rcv.hang.Store(true)
		e.clk.Step(time.Minute)
		d = e.waitRetrying(id, 2)
		Expect(d.Status.LastResponseCode).To(Equal(int32(0)))
		Expect(d.Status.LastError).To(Equal("no answer within 300ms"))
	})

	It("signs each attempt with the endpoint's current secret, and a resend keeps the event id", func() {
		e.rcv.status.Store(503)
		ep, oldSecret := e.endpoint("whep-rotate")
		id := e.event(events.CallEnded)
		e.waitRetrying(id, 1)

		newSecret := send.NewSecret()
		sec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: send.SecretName(ep.Name)}, sec)).To(Succeed())
		sec.Data[switchboardv1alpha1.SigningSecretKey] = []byte(newSecret)
		Expect(k8sClient.Update(ctx, sec)).To(Succeed())
		time.Sleep(300 * time.Millisecond) // let the manager's cache see the rotation
		e.rcv.status.Store(200)
		e.clk.Step(time.Minute)
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 2, Code: 200, Endpoint: ep.Name}}))
		reqs := e.rcv.all()
		Expect(reqs).To(HaveLen(2))
		Expect(verifyWith(oldSecret, e.clk.Now(), reqs[0])).To(Succeed())
		Expect(verifyWith(newSecret, e.clk.Now(), reqs[1])).To(Succeed())
		Expect(verifyWith(oldSecret, e.clk.Now(), reqs[1])).To(MatchError(webhookverify.ErrBadSignature))

		// A resend is a fresh delivery with the same event id.
		resend := send.NewDelivery(ep, id.String(), events.CallEnded, "whdl-x", "resend-1")
		Expect(k8sClient.Create(ctx, resend)).To(Succeed())
		Eventually(func() int { return len(e.history(id)) }).WithTimeout(20 * time.Second).Should(Equal(2))
		reqs = e.rcv.all()
		Expect(reqs).To(HaveLen(3))
		Expect(reqs[2].header.Get("X-Service-Delivery")).To(Equal(id.String()))
		Expect(reqs[2].body).To(Equal(reqs[0].body), "the body is fixed once made")
	})

	It("cancels pending deliveries when paused, does not deliver events while paused, and resumes", func() {
		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-pause")
		retrying := e.event(events.CallEnded)
		e.waitRetrying(retrying, 1)

		e.patchEndpoint(ep, func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.Paused = true })
		Eventually(func() []historyRow { return e.history(retrying) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "cancelled", Attempts: 1, Code: 500, Err: "HTTP 500: the endpoint did not answer with a 2xx status", Endpoint: ep.Name}}))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhasePaused))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		whilePaused := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(whilePaused) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "cancelled", Err: "The endpoint was paused or switched off when the event occurred", Endpoint: ep.Name}}))
		e.clk.Step(time.Hour)
		Consistently(func() int { return len(e.rcv.all()) }).WithTimeout(500 * time.Millisecond).Should(Equal(1))

		e.rcv.status.Store(200)
		e.patchEndpoint(ep, func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.Paused = false })
		after := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(after) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 200, Endpoint: ep.Name}}))
	})

	It("cancels retrying deliveries as soon as their endpoint is paused, not when their retry falls due", func() {
		// The timers uncapped, as in serve: the retries are a minute away and nothing but the
		// pause wakes the deliveries.
		e.noRequeueCap = true
		e.restart()
		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-pause-now")
		var retrying []uuid.UUID
		for range 3 {
			id := e.event(events.CallEnded)
			e.waitRetrying(id, 1)
			retrying = append(retrying, id)
		}
		e.patchEndpoint(ep, func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.Paused = true })
		for _, id := range retrying {
			Eventually(func() []historyRow { return e.history(id) }).WithTimeout(5 * time.Second).Should(
				Equal([]historyRow{{Status: "cancelled", Attempts: 1, Code: 500, Err: "HTTP 500: the endpoint did not answer with a 2xx status", Endpoint: ep.Name}}))
			// The history row is written before the resource is deleted.
			Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).WithTimeout(5 * time.Second).Should(BeEmpty())
		}
		Expect(e.rcv.all()).To(HaveLen(3), "no retry was sent")
	})

	It("switches an endpoint off after 24 hours of failure and emails the owners exactly once", func() {
		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-failing")
		id := e.event(events.CallEnded)
		for i, delay := range send.RetryDelays {
			e.waitRetrying(id, int32(i+1))
			e.clk.Step(delay)
		}
		Eventually(func() int { return len(e.history(id)) }).WithTimeout(20 * time.Second).Should(Equal(1))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive), "12h36m of failure is not yet 24 hours")
		Expect(e.mail.count()).To(Equal(0))

		e.clk.SetTime(t0.Add(24 * time.Hour))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff))
			g.Expect(ep.Status.OwnersNotifiedAt).NotTo(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(ep.Spec.Paused).To(BeFalse(), "the controller leaves the owner's spec alone")
		Expect(ep.Spec.ActivatedAt).To(BeNil())
		Expect(ep.Status.SwitchedOffAt.Time).To(BeTemporally("==", t0.Add(24*time.Hour)))
		Expect(ep.Status.FailingSince.Time).To(BeTemporally("==", t0))
		Expect(meta.IsStatusConditionFalse(ep.Status.Conditions, switchboardv1alpha1.ConditionReady)).To(BeTrue())
		Expect(meta.FindStatusCondition(ep.Status.Conditions, switchboardv1alpha1.ConditionReady).Reason).To(Equal(switchboardv1alpha1.ReasonSwitchedOff))
		Expect(e.mail.count()).To(Equal(1))
		e.mail.mu.Lock()
		Expect(e.mail.rcpt[0]).To(Equal([]string{e.tenant.Owner.Email}))
		Expect(e.mail.msgs[0]).To(ContainSubstring("switched off"))
		e.mail.mu.Unlock()

		// Even if the status write were lost (a crash after sending), the claim in PostgreSQL
		// stops a second email from a restarted manager.
		base := ep.DeepCopy()
		ep.Status.OwnersNotifiedAt = nil
		Expect(k8sClient.Status().Patch(ctx, ep, client.MergeFrom(base))).To(Succeed())
		e.restart()
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.OwnersNotifiedAt).NotTo(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(e.mail.count).WithTimeout(time.Second).Should(Equal(1))
		Eventually(func(g Gomega) []string { return eventReasons(g, ep) }).WithTimeout(10 * time.Second).Should(
			ContainElements("SwitchedOff", "OwnersNotified"))

		// Events while switched off are not delivered.
		off := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(off) }).WithTimeout(20 * time.Second).Should(HaveLen(1))
		Expect(e.history(off)[0].Status).To(Equal("cancelled"))

		// Setting it active (what the API's PATCH status active writes) switches it on with a
		// clean record.
		e.rcv.status.Store(200)
		e.patchEndpoint(ep, func(ep *switchboardv1alpha1.WebhookEndpoint) { send.SwitchOn(ep, e.clk.Now()) })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
			g.Expect(ep.Status.FailingSince).To(BeNil())
			g.Expect(ep.Status.SwitchedOffAt).To(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(g, ep) }).WithTimeout(10 * time.Second).Should(ContainElement("SwitchedOn"))
		on := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(on) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 200, Endpoint: ep.Name}}))
	})

	It("a success clears failingSince", func() {
		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-flaky")
		id := e.event(events.CallEnded)
		e.waitRetrying(id, 1)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.FailingSince).NotTo(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		e.rcv.status.Store(200)
		e.clk.Step(time.Minute)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.FailingSince).To(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("stops deliveries at once when the endpoint is deleted, including an attempt in flight", func() {
		e.stop()
		e.timeout = time.Minute
		e.start()
		e.rcv.hang.Store(true)
		ep, _ := e.endpoint("whep-gone")
		id := e.event(events.CallEnded)
		Eventually(e.rcv.inHang).WithTimeout(20 * time.Second).Should(Receive())
		start := time.Now()
		Expect(k8sClient.Delete(ctx, ep)).To(Succeed())
		Eventually(func() []received { return e.rcv.all() }).WithTimeout(10 * time.Second).Should(HaveLen(1))
		Expect(e.rcv.all()[0].cancelled).To(BeTrue(), "the attempt in flight was cancelled")
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "cancelled", Endpoint: ep.Name}}))
		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).WithTimeout(20 * time.Second).Should(BeEmpty())
	})

	It("loses nothing when the manager restarts mid-delivery", func() {
		e.stop()
		e.timeout = time.Minute
		e.start()
		e.rcv.hang.Store(true)
		ep, secret := e.endpoint("whep-restart")
		id := e.event(events.CallEnded)
		Eventually(e.rcv.inHang).WithTimeout(20 * time.Second).Should(Receive())
		e.rcv.hang.Store(false)
		e.restart() // the attempt in flight is abandoned, not counted
		// A minute: the new manager's caches sync first, which takes seconds on a loaded machine.
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(time.Minute).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		reqs := e.rcv.all()
		Expect(reqs).To(HaveLen(2))
		Expect(reqs[0].cancelled).To(BeTrue())
		for _, r := range reqs {
			Expect(r.header.Get("X-Service-Delivery")).To(Equal(id.String()))
			Expect(verifyWith(secret, t0, r)).To(Succeed())
		}
	})

	It("generates the signing secret of an endpoint created with kubectl apply", func() {
		ep := &switchboardv1alpha1.WebhookEndpoint{
			ObjectMeta: metav1.ObjectMeta{Name: "crm-by-kubectl", Namespace: e.ns},
			Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: e.tenant.Account.PublicID, DisplayName: "By kubectl", URL: e.rcv.srv.URL,
				Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded}},
		}
		Expect(k8sClient.Create(ctx, ep)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
			g.Expect(meta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1alpha1.ConditionSigningSecretReady)).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(ep.Spec.SigningSecretRef).To(BeNil(), "the controller leaves the spec as the user wrote it")
		sec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: send.SecretName(ep.Name)}, sec)).To(Succeed())
		secret := string(sec.Data[switchboardv1alpha1.SigningSecretKey])
		Expect(secret).To(HavePrefix("whsec_"))
		Expect(metav1.IsControlledBy(sec, ep)).To(BeTrue())
		// The secret appears nowhere on the endpoint object.
		raw, err := yamlOf(ep)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw).NotTo(ContainSubstring(secret))
		Expect(raw).NotTo(ContainSubstring("whsec_"))
		Eventually(func(g Gomega) {
			evs := kubeEventsAbout(g, ep)
			g.Expect(evs).To(ContainElement(HaveField("Reason", "SigningSecretGenerated")))
			for _, ev := range evs {
				g.Expect(ev.Note).NotTo(ContainSubstring("whsec_"), "an Event never carries the secret")
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())

		id := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(HaveLen(1))
		Expect(verifyWith(secret, t0, e.rcv.all()[0])).To(Succeed())
	})

	It("signs with an operator's own Secret, which the manager's cache does not hold", func() {
		secret := send.NewSecret()
		own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "crm-signing", Namespace: e.ns},
			Data: map[string][]byte{switchboardv1alpha1.SigningSecretKey: []byte(secret)}}
		Expect(k8sClient.Create(ctx, own)).To(Succeed())
		ep := &switchboardv1alpha1.WebhookEndpoint{
			ObjectMeta: metav1.ObjectMeta{Name: "crm-own-secret", Namespace: e.ns},
			Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: e.tenant.Account.PublicID, DisplayName: "Own secret", URL: e.rcv.srv.URL,
				Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded}, SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: own.Name}},
		}
		Expect(k8sClient.Create(ctx, ep)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
			ready := meta.FindStatusCondition(ep.Status.Conditions, switchboardv1alpha1.ConditionSigningSecretReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Message).To(ContainSubstring("lacks the label " + send.LabelSigningSecret + "=true"))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("the cache holds the service's own signing secrets only")
		Expect(apierrors.IsNotFound(e.cached.Get(ctx, client.ObjectKeyFromObject(own), &corev1.Secret{}))).To(BeTrue())
		labelled, _ := e.endpoint("whep-labelled")
		Eventually(func() error {
			return e.cached.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: labelled.Spec.SigningSecretRef.Name}, &corev1.Secret{})
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("deliveries are signed with it all the same")
		id := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(HaveLen(2))
		var got []string
		for _, r := range e.rcv.all() {
			if r.path == "/" {
				Expect(verifyWith(secret, t0, r)).To(Succeed())
			}
			got = append(got, r.path)
		}
		Expect(got).To(ContainElements("/", "/hooks"))
	})

	It("creates each delivery once however often the dispatcher runs (at least once, same event id)", func() {
		ep, _ := e.endpoint("whep-once")
		e.stop() // drive the dispatcher by hand
		id := e.event(events.CallEnded)
		// A dispatcher that claimed the event, created its delivery and stopped before marking
		// the event dispatched: once the claim's lease ends, the next pass creates the same name
		// again, which already exists.
		Expect(e.st.ClaimEvents(ctx, 10, e.clk.Now(), engine.DefaultEventLease)).To(HaveLen(1))
		Expect(k8sClient.Create(ctx, send.NewDelivery(ep, id.String(), events.CallEnded, "", ""))).To(Succeed())
		w := &engine.Dispatcher{Client: k8sClient, Reader: k8sClient, Store: e.st, Clock: e.clk, Log: GinkgoLogr}
		Expect(w.DispatchOnce(ctx)).To(Equal(0), "the stopped dispatcher's claim holds the event until its lease ends")
		e.clk.Step(engine.DefaultEventLease)
		Expect(w.DispatchOnce(ctx)).To(Equal(1))
		Expect(w.DispatchOnce(ctx)).To(Equal(0), "nothing left to dispatch")
		Expect(e.live(id)).To(HaveLen(1))
		Expect(apierrors.IsAlreadyExists(k8sClient.Create(ctx, send.NewDelivery(ep, id.String(), events.CallEnded, "", "")))).To(BeTrue())
		e.start()
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		Expect(e.rcv.all()).To(HaveLen(1))
	})

	It("does not send again when the repeat of an unmarked fan-out comes after the delivery finished", func() {
		ep, _ := e.endpoint("whep-repeat")
		e.stop()
		id := e.event(events.CallEnded)
		Expect(e.st.ClaimEvents(ctx, 10, e.clk.Now(), engine.DefaultEventLease)).To(HaveLen(1))
		Expect(k8sClient.Create(ctx, send.NewDelivery(ep, id.String(), events.CallEnded, "", ""))).To(Succeed())
		e.start() // the delivery is made and leaves etcd; the event stays claimed, unmarked
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 1, Code: 204, Endpoint: ep.Name}}))
		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).WithTimeout(20 * time.Second).Should(BeEmpty())
		e.stop()
		var dispatched *time.Time
		Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT dispatched_at FROM events WHERE id = $1`, id).Scan(&dispatched)).To(Succeed())
		Expect(dispatched).To(BeNil(), "the claim was never marked")
		e.clk.Step(engine.DefaultEventLease)
		e.start()
		Eventually(func(g Gomega) {
			g.Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT dispatched_at FROM events WHERE id = $1`, id).Scan(&dispatched)).To(Succeed())
			g.Expect(dispatched).NotTo(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(id) }).WithTimeout(20 * time.Second).Should(BeEmpty())
		Consistently(func() []received { return e.rcv.all() }).WithTimeout(time.Second).Should(HaveLen(1))
		Expect(e.history(id)).To(HaveLen(1))
	})

	It("never lets more deliveries await a first attempt than the bound, and takes more events as they finish", func() {
		e.endpoint("whep-cap-a")
		e.endpoint("whep-cap-b")
		e.stop()
		// The dispatcher alone: nothing is attempted, so only deletions make room.
		m, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0", Controller: testControllers})
		Expect(err).NotTo(HaveOccurred())
		eng, err := engine.NewEngine(ctx, m, engine.EngineOptions{Store: e.st, Clock: e.clk})
		Expect(err).NotTo(HaveOccurred())
		eng.First.Off = true // every delivery a resource
		const bound = 20
		Expect(m.Add(&engine.Dispatcher{Client: m.GetClient(), Reader: m.GetAPIReader(), Store: e.st, Clock: e.clk,
			Interval: 20 * time.Millisecond, Engine: eng, MaxPending: bound, Log: GinkgoLogr})).To(Succeed())
		mctx, mcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(m.Start(mctx)).To(Succeed())
		}()
		e.stop = func() {
			mcancel()
			Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed())
		}
		const n = 40 // two deliveries each
		for range n {
			e.event(events.CallEnded)
		}
		live := func() []switchboardv1alpha1.WebhookDelivery {
			list := &switchboardv1alpha1.WebhookDeliveryList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(e.ns))).To(Succeed())
			return list.Items
		}
		undispatched := func() int {
			var c int
			Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1 AND dispatched_at IS NULL`,
				e.tenant.Account.ID).Scan(&c)).To(Succeed())
			return c
		}
		Eventually(func() int { return len(live()) }).WithTimeout(10 * time.Second).Should(BeNumerically(">=", bound/2))
		Consistently(func() int { return len(live()) }).WithTimeout(time.Second).Should(BeNumerically("<=", bound))
		Expect(undispatched()).To(BeNumerically(">", 0), "events wait in the outbox")
		// Finishing deliveries (deleting them) lets the dispatcher take the rest, never above the bound.
		created := map[string]bool{}
		Eventually(func(g Gomega) {
			items := live()
			Expect(len(items)).To(BeNumerically("<=", bound))
			for _, d := range items {
				created[d.Name] = true
				Expect(k8sClient.Delete(ctx, &d)).To(Or(Succeed(), WithTransform(apierrors.IsNotFound, BeTrue())))
			}
			g.Expect(undispatched()).To(Equal(0))
			g.Expect(live()).To(BeEmpty())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(created).To(HaveLen(2 * n))
	})

	It("keeps one hanging endpoint from slowing the others", func() {
		e.stop()
		e.timeout = time.Minute
		e.start()
		slow := startReceiver()
		slow.hang.Store(true)
		_, _ = e.endpointAt(slow, "whep-slow")
		fast, _ := e.endpoint("whep-fast")
		var ids []uuid.UUID
		for range 20 {
			ids = append(ids, e.event(events.CallEnded))
		}
		start := time.Now()
		Eventually(func() int {
			n := 0
			for _, id := range ids {
				for _, h := range e.history(id) {
					if h.Endpoint == fast.Name && h.Status == "succeeded" {
						n++
					}
				}
			}
			return n
		}).WithTimeout(20 * time.Second).Should(Equal(20))
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
		// The hanging endpoint holds at most its per-endpoint share of the workers.
		Expect(len(slow.inHang)).To(BeNumerically("<=", 8))
		Expect(len(slow.inHang)).To(BeNumerically(">=", 1))
	})

	It("shares the claims between accounts: one account's flood to a slow receiver holds back neither another account's events nor its own in etcd", func() {
		slow := startReceiver()
		slow.delay.Store(int64(100 * time.Millisecond))
		floodEp, _ := e.endpointAt(slow, "whep-flood")
		other := e.otherAccount()
		steadyEp, _ := other.endpoint("whep-steady")
		// The flood: 3,000 events queued at once, ahead of the other account's.
		const flood = 3000
		floodEvents := make([]events.Event, flood)
		for i := range floodEvents {
			id := uuid.New()
			floodEvents[i] = events.Event{ID: id, AccountID: e.tenant.Account.ID, Type: events.CallEnded,
				Body: []byte(fmt.Sprintf(`{"event":"call.ended","id":%q}`, id)), CreatedAt: e.clk.Now()}
		}
		Expect(e.st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.EnqueueEvents(ctx, floodEvents)
			return err
		})).To(Succeed())
		Eventually(func() int { return len(slow.all()) }).WithTimeout(10 * time.Second).Should(BeNumerically(">", 0))
		// The other account's events go out while the flood waits, each within a second.
		for range 5 {
			id := other.event(events.CallEnded)
			queued := time.Now()
			Eventually(func(g Gomega) {
				h := other.history(id)
				g.Expect(h).To(HaveLen(1))
				g.Expect(h[0].Endpoint).To(Equal(steadyEp.Name))
				g.Expect(h[0].Status).To(Equal("succeeded"))
			}).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
			Expect(time.Since(queued)).To(BeNumerically("<", time.Second), "the other account's event waited behind the flood")
		}
		// The flood's surplus waits in the outbox, not as resources, and nothing is cancelled:
		// it is delivered at its receiver's pace (8 at a time, 100 ms each).
		list := &switchboardv1alpha1.WebhookDeliveryList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(e.ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
		var cancelled, undispatched int
		Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_history
			WHERE endpoint_public_id = $1 AND status <> 'succeeded'`, floodEp.Name).Scan(&cancelled)).To(Succeed())
		Expect(cancelled).To(BeZero())
		Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1 AND dispatched_at IS NULL`,
			e.tenant.Account.ID).Scan(&undispatched)).To(Succeed())
		Expect(undispatched).To(BeNumerically(">", flood/2), "the flood drains at its receiver's pace")
	})

	It("makes one endpoint's slow hand-offs to the controller off the claim loop: the others' next events go out meanwhile", func() {
		e.stop()
		slow := &slowCreates{endpoint: "whep-handoff-slow", release: make(chan struct{})}
		e.dispatcherClient = func(c client.Client) client.Client { slow.Client = c; return slow }
		e.start()
		release := sync.OnceFunc(func() { close(slow.release) })
		DeferCleanup(release) // before the manager stops
		slowEp, _ := e.endpoint(slow.endpoint)
		fast, _ := e.endpoint("whep-handoff-fast")
		// Failing for an hour: every delivery to it is handed to the controller, a resource
		// whose creation waits.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(slowEp), slowEp)).To(Succeed())
		slowEp.Status.FailingSince = &metav1.Time{Time: e.clk.Now().Add(-time.Hour)}
		Expect(k8sClient.Status().Update(ctx, slowEp)).To(Succeed())
		succeeded := func(id uuid.UUID) bool {
			for _, h := range e.history(id) {
				if h.Endpoint == fast.Name && h.Status == "succeeded" {
					return true
				}
			}
			return false
		}
		dispatched := func(id uuid.UUID) bool {
			var at *time.Time
			Expect(storetest.SQL(GinkgoT(), e.st).QueryRow(ctx, `SELECT dispatched_at FROM events WHERE id = $1`, id).Scan(&at)).To(Succeed())
			return at != nil
		}
		first := e.event(events.CallEnded)
		Eventually(slow.waiting.Load).WithTimeout(10 * time.Second).Should(BeEquivalentTo(1))
		Eventually(func() bool { return succeeded(first) }).WithTimeout(10 * time.Second).Should(BeTrue())
		// The first event's hand-off still waits; the next events are claimed and delivered.
		var next []uuid.UUID
		for range 3 {
			next = append(next, e.event(events.CallEnded))
		}
		Eventually(func() bool { return succeeded(next[0]) && succeeded(next[1]) && succeeded(next[2]) }).WithTimeout(10 * time.Second).Should(BeTrue())
		Eventually(slow.waiting.Load).WithTimeout(10*time.Second).Should(BeEquivalentTo(4), "every hand-off to the slow endpoint waits")
		Expect(dispatched(first)).To(BeFalse(), "an event is marked dispatched only once all its deliveries exist")
		Expect(e.live(first)).To(BeEmpty())
		// Released, the resources are made and the events marked.
		release()
		for _, id := range append(next, first) {
			Eventually(func() bool { return dispatched(id) }).WithTimeout(10 * time.Second).Should(BeTrue())
			Expect(len(e.live(id))+len(slices.DeleteFunc(e.history(id), func(h historyRow) bool { return h.Endpoint != slowEp.Name }))).To(
				BeNumerically(">=", 1), "the slow endpoint's delivery exists (live, or finished by the controller)")
		}
	})

	It("defers deliveries past an endpoint's live-delivery bound in PostgreSQL, keeps delivering to the others, and delivers each deferred one once the endpoint recovers", func() {
		e.stop()
		e.maxLivePerEndpoint = 3
		// The engine holds one first attempt of the stuck endpoint; the rest go to the
		// controller, whose live-delivery bound is the one under test.
		e.firstMaxWaiting = 1
		e.start()
		stuck := startReceiver()
		stuck.status.Store(503)
		stuckEp, _ := e.endpointAt(stuck, "whep-stuck")
		fine, _ := e.endpoint("whep-fine")
		var ids []uuid.UUID
		statuses := func(ep string) map[string]int {
			n := map[string]int{}
			for _, id := range ids {
				for _, h := range e.history(id) {
					if h.Endpoint == ep {
						n[h.Status]++
					}
				}
			}
			return n
		}
		stuckLive := func() int {
			list := &switchboardv1alpha1.WebhookDeliveryList{}
			Expect(k8sClient.List(ctx, list, client.InNamespace(e.ns), client.MatchingLabels{send.LabelEndpoint: stuckEp.Name})).To(Succeed())
			return len(list.Items)
		}
		deferred := func() int64 {
			n, err := e.st.DeferredDeliveries(ctx)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		// One event at a time: the healthy endpoint's first attempts go on past the bound.
		for i := range 7 {
			ids = append(ids, e.event(events.CallEnded))
			Eventually(func() map[string]int { return statuses(fine.Name) }).WithTimeout(20 * time.Second).Should(Equal(map[string]int{"succeeded": i + 1}))
			Expect(stuckLive()).To(BeNumerically("<=", 3), "the bound on the stuck endpoint's live deliveries")
		}
		for _, id := range ids {
			for _, h := range e.history(id) {
				if h.Endpoint == fine.Name {
					Expect(h.Attempts).To(Equal(1), "the healthy endpoint's deliveries succeed at their first attempt")
				}
			}
		}
		// Three retrying resources, four deliveries waiting in PostgreSQL, none cancelled.
		Eventually(deferred).WithTimeout(20 * time.Second).Should(BeEquivalentTo(4))
		Eventually(func(g Gomega) {
			list := &switchboardv1alpha1.WebhookDeliveryList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(e.ns), client.MatchingLabels{send.LabelEndpoint: stuckEp.Name})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(3))
			for _, d := range list.Items {
				g.Expect(d.Status.Phase).To(Equal(switchboardv1alpha1.WebhookDeliveryPhaseRetrying))
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(statuses(stuckEp.Name)).To(BeEmpty(), "nothing to the stuck endpoint is finished, so nothing is cancelled")

		// The endpoint recovers: the retries succeed as their time comes, each freed place
		// promotes the oldest deferred delivery, and every event arrives once.
		recovered := time.Now()
		stuck.status.Store(204)
		Eventually(func() map[string]int {
			Expect(stuckLive()).To(BeNumerically("<=", 3))
			e.clk.Step(time.Minute)
			return statuses(stuckEp.Name)
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(map[string]int{"succeeded": 7}))
		Eventually(deferred).WithTimeout(10 * time.Second).Should(BeZero())
		got := map[string]int{}
		for _, r := range stuck.all() {
			if !r.at.Before(recovered) {
				for _, id := range ids {
					if strings.Contains(string(r.body), id.String()) {
						got[id.String()]++
					}
				}
			}
		}
		for _, id := range ids {
			Expect(got[id.String()]).To(Equal(1), "event %s delivered once after the recovery", id)
		}
	})

	It("probes a failing endpoint whose deliveries are deferred, so that once it answers again its new events arrive without waiting for a retry", func() {
		e.stop()
		e.maxLivePerEndpoint = 1
		e.firstMaxWaiting = 1
		e.probeInterval = 500 * time.Millisecond
		e.start()
		stuck := startReceiver()
		stuck.status.Store(503)
		stuckEp, _ := e.endpointAt(stuck, "whep-down")
		deferred := func() int64 {
			n, err := e.st.DeferredDeliveries(ctx)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		sentTo := func(id uuid.UUID) int {
			n := 0
			for _, r := range stuck.all() {
				if strings.Contains(string(r.body), id.String()) {
					n++
				}
			}
			return n
		}
		succeeded := func(id uuid.UUID) bool {
			for _, h := range e.history(id) {
				if h.Endpoint == stuckEp.Name && h.Status == "succeeded" {
					return true
				}
			}
			return false
		}
		// The first event's attempt fails and its resource takes the endpoint's one place.
		first := e.event(events.CallEnded)
		Eventually(func() []switchboardv1alpha1.WebhookDelivery { return e.live(first) }).WithTimeout(20 * time.Second).Should(HaveLen(1))
		// The endpoint's status shows it failing for longer than the grace.
		e.clk.Step(15 * time.Second)
		Eventually(func(g Gomega) {
			ep := &switchboardv1alpha1.WebhookEndpoint{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stuckEp), ep)).To(Succeed())
			g.Expect(ep.Status.FailingSince).NotTo(BeNil())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		// No room: the next event is attempted once (a probe), fails, and is deferred.
		second := e.event(events.CallEnded)
		Eventually(deferred).WithTimeout(20 * time.Second).Should(BeEquivalentTo(1))
		Expect(sentTo(second)).To(Equal(1), "the probe reached the endpoint")

		// The endpoint answers again. Without a retry falling due (the clock stands still),
		// the next event's probe finds it and the event is delivered at once.
		stuck.status.Store(204)
		time.Sleep(e.probeInterval)
		third := e.event(events.CallEnded)
		Eventually(func() bool { return succeeded(third) }).WithTimeout(20 * time.Second).Should(BeTrue())
		Expect(sentTo(first)).To(Equal(1), "the first event's retry is not due yet")
		// The status clears, and the events after it are plain first attempts.
		fourth := e.event(events.CallEnded)
		Eventually(func() bool { return succeeded(fourth) }).WithTimeout(20 * time.Second).Should(BeTrue())

		// The retry falls due: the first succeeds, its place promotes the deferred second, and
		// every event arrives exactly once after the recovery.
		Eventually(func() bool {
			e.clk.Step(time.Minute)
			return succeeded(first) && succeeded(second)
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())
		Eventually(deferred).WithTimeout(10 * time.Second).Should(BeZero())
		Expect(sentTo(first)).To(Equal(2))
		Expect(sentTo(second)).To(Equal(2))
		Expect(sentTo(third)).To(Equal(1))
		Expect(sentTo(fourth)).To(Equal(1))
	})

	It("records the deferred deliveries of an endpoint paused meanwhile as cancelled, resendable", func() {
		e.stop()
		e.maxLivePerEndpoint = 1
		e.firstMaxWaiting = 1
		e.start()
		stuck := startReceiver()
		stuck.status.Store(503)
		stuckEp, _ := e.endpointAt(stuck, "whep-stuck")
		var ids []uuid.UUID
		for range 3 {
			ids = append(ids, e.event(events.CallEnded))
		}
		Eventually(func() (int64, error) { return e.st.DeferredDeliveries(ctx) }).WithTimeout(20 * time.Second).Should(BeEquivalentTo(2))
		e.patchEndpoint(stuckEp, func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.Paused = true })
		Eventually(func() int {
			n := 0
			for _, id := range ids {
				for _, h := range e.history(id) {
					if h.Endpoint == stuckEp.Name && h.Status == "cancelled" {
						n++
					}
				}
			}
			return n
		}).WithTimeout(30 * time.Second).Should(Equal(3))
		// The rows leave the table after their outcome is recorded.
		Eventually(func() (int64, error) { return e.st.DeferredDeliveries(ctx) }).WithTimeout(10 * time.Second).Should(BeZero())
		gone := 0
		for _, id := range ids {
			for _, h := range e.history(id) {
				if strings.Contains(h.Err, "paused, switched off or deleted while the delivery waited for room") {
					Expect(h.Attempts).To(BeZero())
					gone++
				}
			}
		}
		Expect(gone).To(Equal(2), "the two deferred deliveries are cancelled with the reason")
	})

	It("refuses private addresses at connect time unless explicitly allowed", func() {
		e.stop()
		e.blockPrivate = true
		e.start()
		_, _ = e.endpoint("whep-private") // https://127.0.0.1:port, as a name resolving there would be
		id := e.event(events.CallEnded)
		d := e.waitRetrying(id, 1)
		Expect(d.Status.LastError).To(Equal("refused: the endpoint's address is not on the public internet"))
		Expect(d.Status.LastResponseCode).To(BeZero())
		Expect(e.rcv.all()).To(BeEmpty(), "nothing reached the receiver")
	})
})

func yamlOf(o client.Object) (string, error) {
	b, err := json.Marshal(o)
	return strings.ToLower(string(b)), err
}
