/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Store is what the Dispatcher needs of the database: the outbox, the deferred deliveries,
// and the history for the engine it builds when given none.
type Store interface {
	store.Outbox
	store.Deferred
	store.DeliveryHistory
}

// Dispatcher fans undispatched outbox events out to deliveries: one per endpoint of
// the event's account that subscribes to its type. It runs on every replica (the serve
// process starts it while the replica stands in the delivery fleet, internal/webhook/fleet); claims
// never overlap (FOR UPDATE SKIP LOCKED). With First
// set it is the delivery engine: first attempts are made from here, and a WebhookDelivery is
// created only for a delivery that needs the controller.
//
// A pass claims a batch of events with a lease (one committed statement), makes their
// deliveries with no transaction open, and marks each event dispatched once all its
// deliveries are recorded (a resource, a history row). Delivery names are a hash of event id
// and endpoint, so when the dispatcher stops before marking, the claim's lease ends and the
// next pass makes the same names again, through the controller (AlreadyExists; a delivery
// already finished is in the history and is not sent again) — at least once, never twice per
// endpoint, and a repeat carries the same event id. Events for an endpoint that is paused or
// switched off are recorded as cancelled deliveries (resendable) without a resource. A
// delivery that needs a resource while the live ones are at a cap (MaxLive, MaxLivePerEndpoint)
// is deferred in PostgreSQL, and promoted to a resource as room frees (promote).
type Dispatcher struct {
	// Client creates deliveries; Reader reads past the cache (a signing secret the cache does
	// not hold).
	Client client.Client
	Reader client.Reader
	// Endpoints lists the endpoints an event is fanned out to (default: live, through Reader;
	// serve uses WatchedEndpoints).
	Endpoints EndpointLister
	Store     Store
	Clock     clock.PassiveClock
	// Interval is how often the outbox is polled when it was empty (default 1 s). It is the
	// fallback only: a commit that queues events wakes the dispatcher at once
	// (store.ListenOutbox), and events released after a failed fan-out or left by an expired
	// claim are found by the poll.
	Interval time.Duration
	// BatchSize is how many events one claim takes (default 200).
	BatchSize int
	// Lease is how long a claim holds its events unless renewed (default DefaultEventLease):
	// Start renews the claims it holds every third of it, and past it the events of a
	// dispatcher that died are claimed again.
	Lease time.Duration
	// Parallel is how many deliveries of one endpoint are made at once (default 32).
	Parallel int
	// MaxQueued bounds the deliveries a pass handed on and not yet made (resources
	// being created, history rows being written; default 1024): past it the dispatcher
	// claims no more events. Deliveries are made off the claim loop, each endpoint on its
	// own Parallel lanes, so an endpoint whose hand-offs are slow (a hanging one: every
	// delivery to it becomes a resource) never holds up the next claim or the others.
	MaxQueued int
	// With the Engine's Backlog the dispatcher is paced: it takes events only while the
	// deliveries whose first attempt is still to be made stay within MaxPending (default
	// 2000). Events wait in the outbox meanwhile.
	MaxPending int
	// MaxLive bounds the live deliveries in all (default DefaultMaxLiveDeliveries; negative:
	// no bound), and MaxLivePerEndpoint one endpoint's (default
	// DefaultMaxLiveDeliveriesPerEndpoint; negative: no bound). Past either, a delivery that
	// needs a resource is deferred in PostgreSQL (store.DeferDelivery) and promoted as room
	// frees; first attempts go on. Both need the Engine's Backlog.
	MaxLive            int
	MaxLivePerEndpoint int
	// PromoteInterval is how often deferred deliveries are looked for when no live delivery
	// was removed (default DefaultPromoteInterval).
	PromoteInterval time.Duration
	// MaxHeldPerAccount bounds the events one account holds claimed here at once (default:
	// the engine's bound on one endpoint's waiting first attempts); past it the account's
	// events wait in the outbox while the other accounts' are claimed (AccountShare).
	MaxHeldPerAccount int
	// Engine makes first attempts straight from the outbox (only deliveries that need the
	// controller become resources; with First.Off every delivery is one) and writes the
	// cancelled deliveries. Nil: an engine without first attempts or backlog, on Store and
	// Clock.
	Engine *Engine
	Log    logr.Logger

	// jobs are the deliveries being made and the first attempts running; Start waits for
	// them before it returns.
	jobs sync.WaitGroup
	// queued counts the deliveries handed on and not yet made (see MaxQueued).
	queued atomic.Int64
	lanes  endpointLanes
	// claims are the events claimed and not yet marked or released, for the renewals.
	claims heldClaims
	// accounts is what each account holds of this dispatcher, for the fair share of claims
	// (AccountShare); cursor is where the next claim's scan of accounts resumes.
	accounts accountLoads
	cursor   atomic.Int64
	// promoteCursor is where the next claim of deferred deliveries resumes.
	promoteCursor store.DeferredCursor
}

// DefaultMaxQueuedDeliveries bounds the deliveries handed on by the dispatcher's passes
// and not yet made.
const DefaultMaxQueuedDeliveries = 1024

// DefaultMaxPendingDeliveries bounds the deliveries waiting for a first attempt.
const DefaultMaxPendingDeliveries = 2000

// DefaultPollInterval is how often the dispatcher polls the outbox when no commit woke it.
const DefaultPollInterval = time.Second

// DefaultEventLease is how long a dispatcher's claim on outbox events lasts unless renewed;
// the dispatcher renews its claims every third of it while it holds them, so this is how
// long the events of a replica that died wait before another takes them. It is longer than
// the fleet's member TTL (fleet.DefaultMemberTTL): a replica that loses PostgreSQL cannot
// renew, and cuts its attempts short once its heartbeat is a TTL old, before its claims end.
const DefaultEventLease = 15 * time.Second

// DefaultMaxLiveDeliveries bounds the live WebhookDeliveries in all: a retrying one is about
// 1.2 KB of JSON, at most 4.2 KB (TestRetryingDeliverySize), before kube-apiserver's
// metadata, so 20,000 are tens of MB in etcd (default quota 2 GB) and in every replica's
// informer cache.
const DefaultMaxLiveDeliveries = 20000

// DefaultMaxLiveDeliveriesPerEndpoint bounds one endpoint's live deliveries: a tenth of all,
// so at least ten failing endpoints hold resources before the fleet-wide bound is reached.
const DefaultMaxLiveDeliveriesPerEndpoint = 2000

// DefaultPromoteInterval is how often deferred deliveries are looked for when no live
// delivery was removed meanwhile.
const DefaultPromoteInterval = 5 * time.Second

// NeedLeaderElection: true for a manager of its own; serve runs it on every replica instead,
// behind the fleet's gate, where the per-endpoint bound is split among the replicas.
func (w *Dispatcher) NeedLeaderElection() bool { return true }

// Start claims and fans out events until ctx ends: whenever a commit queued some (see
// listen), when room frees up after the backlog or the engine was full, and every Interval.
func (w *Dispatcher) Start(ctx context.Context) error {
	w.defaults()
	// The claims are renewed until the last first attempt is over (they outlive ctx by the
	// engine's stop grace).
	renewing, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		w.renewClaims(renewing)
	}()
	defer func() {
		stopRenewing()
		<-renewed
	}()
	// First attempts cut short by ctx release their events' claims before Start returns, so
	// the next leader takes them at once.
	defer w.jobs.Wait()
	queued := make(chan struct{}, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		w.listen(ctx, queued)
	}()
	defer func() { <-listening }()
	if w.Engine.Backlog != nil {
		promoting := make(chan struct{})
		go func() {
			defer close(promoting)
			w.promote(ctx)
		}()
		defer func() { <-promoting }()
	}
	// The poll interval only paces the loop (real time); every recorded time comes from Clock.
	ticker := time.NewTicker(w.Interval)
	defer ticker.Stop()
	var backlogRoom <-chan struct{}
	if w.Engine.Backlog != nil {
		backlogRoom = w.Engine.Backlog.Changed()
	}
	engineRoom := w.Engine.First.Changed()
	shareRoom := w.accounts.roomChanged()
	var lastPass time.Time
	for {
		limit := w.limit()
		if limit > 0 {
			lastPass = time.Now()
			n, more, err := w.dispatch(ctx, limit)
			if err != nil && ctx.Err() == nil {
				w.Log.Error(err, "dispatch webhook events")
			}
			if (n == limit || more) && err == nil {
				continue
			}
		}
		// Wait for what was missing: events (the outbox was empty, or its accounts were held
		// to their share) or room (the backlog or the engine was full). A signal not waited
		// for stays pending (the channels hold one).
		wake, share, roomA, roomB := (<-chan struct{})(queued), shareRoom, backlogRoom, engineRoom
		if limit > 0 {
			roomA, roomB = nil, nil
		} else {
			wake, share = nil, nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-wake:
			sleepCtx(ctx, wakeGap-time.Since(lastPass))
		case <-share:
			sleepCtx(ctx, roomGap-time.Since(lastPass))
		case <-roomA:
			sleepCtx(ctx, roomGap-time.Since(lastPass))
		case <-roomB:
			sleepCtx(ctx, roomGap-time.Since(lastPass))
		}
	}
}

// wakeGap is the least time between two passes woken by commits: under steady ingestion every
// commit notifies, and a pass per commit would list the account's endpoints on kube-apiserver
// for a handful of events each time. The first commit after a quiet spell passes at once.
const wakeGap = 20 * time.Millisecond

// roomGap is the least time between two passes woken by room: each finished first attempt
// frees room for one event, and a pass per attempt would claim events one at a time.
const roomGap = 20 * time.Millisecond

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// listen signals queued after each commit that queues events, until ctx ends; a lost
// connection is opened again after a pause (the poll goes on meanwhile) that grows only
// while reconnecting fails.
func (w *Dispatcher) listen(ctx context.Context, queued chan<- struct{}) {
	listened := false // ListenOutbox signals once as soon as it listens
	signal := func() {
		listened = true
		select {
		case queued <- struct{}{}:
		default:
		}
	}
	backoff := time.Second
	for {
		listened = false
		err := w.Store.ListenOutbox(ctx, signal)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = time.Second
		}
		w.Log.Error(err, "the outbox listener lost PostgreSQL; polling every interval until it is back", "retry in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (w *Dispatcher) defaults() {
	if w.Interval <= 0 {
		w.Interval = DefaultPollInterval
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 200
	}
	if w.Lease <= 0 {
		w.Lease = DefaultEventLease
	}
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	if w.Endpoints == nil {
		w.Endpoints = LiveEndpoints{Reader: w.Reader}
	}
	if w.Engine == nil {
		w.Engine = &Engine{Store: w.Store, Clock: w.Clock}
	}
	if w.Engine.First == nil {
		// An engine built without NewEngine (tests of the claims alone) attempts nothing.
		w.Engine.First = &FirstAttempts{Clock: w.Clock, Off: true}
	}
	if w.Engine.Backlog != nil && w.MaxPending == 0 {
		w.MaxPending = DefaultMaxPendingDeliveries
	}
	if w.MaxLivePerEndpoint == 0 {
		w.MaxLivePerEndpoint = DefaultMaxLiveDeliveriesPerEndpoint
	}
	if w.MaxLive == 0 {
		w.MaxLive = DefaultMaxLiveDeliveries
	}
	if w.PromoteInterval <= 0 {
		w.PromoteInterval = DefaultPromoteInterval
	}
	if w.Parallel <= 0 {
		w.Parallel = 32
	}
	if w.MaxQueued <= 0 {
		w.MaxQueued = DefaultMaxQueuedDeliveries
	}
	if w.MaxHeldPerAccount <= 0 {
		w.MaxHeldPerAccount = w.Engine.First.maxWaiting()
	}
}

// shareLimits bound what one account holds of this dispatcher (AccountShare).
func (w *Dispatcher) shareLimits() ShareLimits {
	return ShareLimits{MaxHeld: w.MaxHeldPerAccount, MaxHandOffs: max(1, w.MaxQueued/4)}
}

// limit is how many events the backlog leaves room for now (BatchSize without a Backlog).
func (w *Dispatcher) limit() int {
	limit := w.BatchSize
	if w.Engine.Backlog != nil {
		// An endpoint the engine sees stalled (hanging, down) holds its own backlog.
		pending, _ := w.Engine.Backlog.LoadSkipping(w.Engine.First.Stalled)
		limit = eventsToDispatch(w.MaxPending, pending, w.BatchSize, switchboardv1alpha1.MaxWebhookEndpointsPerAccount)
	}
	// Back-pressure on the engine: at most five first attempts an event. What one endpoint
	// can take is bounded per account (AccountShare), not here: one busy endpoint does not
	// slow the claims of the others.
	limit = min(limit, w.Engine.First.Free()/switchboardv1alpha1.MaxWebhookEndpointsPerAccount)
	return max(0, min(limit, (w.MaxQueued-int(w.queued.Load()))/switchboardv1alpha1.MaxWebhookEndpointsPerAccount))
}

// DispatchOnce handles one batch, as large as the backlog leaves room for, waits until its
// deliveries are made (and first attempts over), and returns how many events it fanned out.
func (w *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	w.defaults()
	limit := w.limit()
	if limit == 0 {
		return 0, nil
	}
	n, _, err := w.dispatch(ctx, limit)
	w.jobs.Wait()
	return n, err
}

// dispatch claims up to limit events and hands their deliveries on (fanOut); the last part
// of an event to finish marks it dispatched, or releases its claim when a part failed so the
// next pass retries it. It returns how many events it fanned out, and whether an account
// had more waiting than its share of the claim; the claim on an event whose endpoints could
// not be listed is released at once.
func (w *Dispatcher) dispatch(ctx context.Context, limit int) (int, bool, error) {
	claimedAt := w.Clock.Now()
	hanging := w.Engine.First.Hanging()
	allowance := w.accounts.allowances(AccountShare, w.shareLimits(), hanging)
	// The claim is not cut off when ctx ends: a statement cancelled in flight may still run
	// (PostgreSQL's cancel races its start) and hold events nobody knows of for a lease. A
	// claim that returns after ctx ended is given back at once.
	claimCtx, cancel := settling(ctx, w.Lease)
	defer cancel()
	claim, err := w.Store.ClaimFairly(claimCtx, store.FairClaim{Limit: limit,
		Allowance: allowance, PerAccount: w.MaxHeldPerAccount, After: w.cursor.Load()}, claimedAt, w.Lease)
	if err != nil {
		return 0, false, err
	}
	w.cursor.Store(claim.Next)
	evs := claim.Events
	if ctx.Err() != nil {
		ids := make([]uuid.UUID, len(evs))
		for i, ev := range evs {
			ids[i] = ev.OutboxID
		}
		if err := w.Store.ReleaseEvents(claimCtx, ids); err != nil {
			return 0, false, err
		}
		return 0, false, ctx.Err()
	}
	if len(evs) == 0 {
		w.accounts.noteClaimed(nil, allowance, AccountShare, w.shareLimits(), hanging)
		return 0, claim.Next != 0, nil
	}
	ids := make([]uuid.UUID, len(evs))
	for i, ev := range evs {
		ids[i] = ev.OutboxID
	}
	// Held before the fan-out: its parts may finish (and let go) before it returns.
	w.claims.hold(ids, claimedAt)
	w.accounts.hold(evs)
	// Before any part can finish, so that their next finished event wakes the loop for the rest.
	w.accounts.noteClaimed(evs, allowance, AccountShare, w.shareLimits(), hanging)
	done, failed, running, ferr := w.fanOut(ctx, evs)
	defer w.letGo(append(done, failed...)...)
	if err := w.Store.MarkEventsDispatched(ctx, done, w.Clock.Now()); err != nil {
		return 0, false, err
	}
	if err := w.Store.ReleaseEvents(ctx, failed); err != nil && ferr == nil {
		ferr = err
	}
	return len(done) + running, claim.More || claim.Next != 0, ferr
}

// settleTimeout bounds a write that settles an event's claim once the dispatcher is stopping.
const settleTimeout = 10 * time.Second

// settling is a context for a write that must finish (or fail) on the database's side, not be
// cut off when ctx ends: it keeps ctx's values and ends after timeout.
func settling(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// letGo ends the dispatcher's hold on events marked dispatched or released.
func (w *Dispatcher) letGo(ids ...uuid.UUID) {
	w.claims.letGo(ids...)
	w.accounts.letGo(ids...)
}

// eventProgress counts an event's unfinished parts: its fan-out pass, and each first
// attempt started for it.
type eventProgress struct {
	left   atomic.Int32
	failed atomic.Bool
	// dispatched: the last part's history row marked the event dispatched (lastPart).
	dispatched atomic.Bool
}

// lastPart reports whether the part asking is the event's last unfinished one with none
// failed, and if so notes that its history row marks the event dispatched. Every part
// counts itself in left until finishPart, and the fan-out's pass until it ends, so left is 1
// only for the last.
func (p *eventProgress) lastPart() bool {
	if p.left.Load() != 1 || p.failed.Load() {
		return false
	}
	p.dispatched.Store(true)
	return true
}

// fanOut admits first attempts and hands each delivery of evs on to handOff, which makes it
// off the claim loop (a first attempt, or a write on its endpoint's lanes), and says which events
// have all their deliveries already (done: no endpoint takes them), which could not be
// fanned out (failed), with the first error, and how many are still being delivered
// (running: their last part marks or releases them).
func (w *Dispatcher) fanOut(ctx context.Context, evs []store.PendingEvent) (done, failed []uuid.UUID, running int, err error) {
	endpoints := map[string][]switchboardv1alpha1.WebhookEndpoint{}
	for _, ev := range evs {
		eps, ok := endpoints[ev.AccountPublicID]
		if !ok {
			var lerr error
			if eps, lerr = w.Endpoints.ListEndpoints(ctx, ev.AccountPublicID, ev.EndpointsWritten); lerr != nil {
				if err == nil {
					err = lerr
				}
				failed = append(failed, ev.OutboxID)
				continue
			}
			endpoints[ev.AccountPublicID] = eps
		}
		p := &eventProgress{}
		p.left.Store(1) // this pass
		for i := range eps {
			ep := &eps[i]
			if ep.DeletionTimestamp != nil || ep.Spec.AccountID != ev.AccountPublicID || !addressed(ev, ep) {
				continue
			}
			// The engine admits first attempts here, so that the next pass's limit sees them.
			admitted, route, rule := w.Engine.First.Admit(ep, ev.Repeat, w.noRoom(ep))
			p.left.Add(1)
			w.queued.Add(1)
			w.accounts.add(ev.AccountID, 0, 1)
			w.jobs.Add(1)
			go w.handOff(ctx, ev, ep, admission{route: route, rule: rule, done: admitted}, p)
		}
		if p.left.Add(-1) > 0 {
			running++
		} else {
			done = append(done, ev.OutboxID)
		}
	}
	return done, failed, running, err
}

// admission is the route FirstAdmission chose for one delivery, the rule that chose it, and
// for a first attempt the release of its admission.
type admission struct {
	route Route
	rule  string
	done  func()
}

// ruleSigningSecretNotReady names the route decided outside FirstAdmission: an endpoint just
// created whose signing secret is not there yet (the controller waits for it).
const ruleSigningSecretNotReady = "SigningSecretNotReady"

// handOff makes one delivery (deliver) off the claim loop.
func (w *Dispatcher) handOff(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, adm admission, p *eventProgress) {
	defer w.jobs.Done()
	err := w.deliver(ctx, ev, ep, adm, p)
	w.queued.Add(-1)
	w.accounts.add(ev.AccountID, 0, -1)
	if err != nil {
		if ctx.Err() == nil {
			w.Log.Error(err, "make webhook delivery", "event", ev.ID, "endpoint", ep.Name)
		}
		p.failed.Store(true)
	}
	w.finishPart(ctx, ev, p)
}

// finishPart ends one part of ev; the last one marks ev dispatched, or gives its claim back
// when a part failed (also when ctx ended), so the next pass takes it again.
func (w *Dispatcher) finishPart(ctx context.Context, ev store.PendingEvent, p *eventProgress) {
	if p.left.Add(-1) > 0 {
		return
	}
	bg, cancel := settling(ctx, settleTimeout)
	defer cancel()
	var err error
	switch {
	case p.failed.Load():
		err = w.Store.ReleaseEvents(bg, []uuid.UUID{ev.OutboxID})
	case p.dispatched.Load(): // with the history row of its last part
	default:
		err = w.Store.MarkEventDispatched(bg, ev.OutboxID, w.Clock.Now())
	}
	w.letGo(ev.OutboxID)
	if err != nil {
		w.Log.Error(err, "finish webhook event", "event", ev.ID) // the claim's lease ends; it is taken again
	}
}

// onLane runs write (a write for a delivery that is not a first attempt) on one of ep's
// lanes: at most Parallel of an endpoint's deliveries are made at once, whatever the others
// do.
func (w *Dispatcher) onLane(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint, write func() error) error {
	release, err := w.lanes.acquire(ctx, client.ObjectKeyFromObject(ep), w.Parallel)
	if err != nil {
		return err
	}
	defer release()
	return write()
}

// endpointLanes bounds the deliveries of each endpoint made at once.
type endpointLanes struct {
	mu    sync.Mutex
	lanes map[types.NamespacedName]*lane
}

type lane struct {
	slots chan struct{}
	users int
}

// acquire waits for one of key's n lanes (or ctx); release gives it back.
func (l *endpointLanes) acquire(ctx context.Context, key types.NamespacedName, n int) (release func(), err error) {
	l.mu.Lock()
	if l.lanes == nil {
		l.lanes = map[types.NamespacedName]*lane{}
	}
	ln := l.lanes[key]
	if ln == nil {
		ln = &lane{slots: make(chan struct{}, n)}
		l.lanes[key] = ln
	}
	ln.users++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if ln.users--; ln.users == 0 {
			delete(l.lanes, key)
		}
	}
	select {
	case ln.slots <- struct{}{}:
		return func() { <-ln.slots; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// addressed reports whether ev goes to ep: the one endpoint it was queued for (a test
// event), or else every endpoint that subscribes to its type.
func addressed(ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint) bool {
	if ev.EndpointPublicID != "" {
		return ep.Name == ev.EndpointPublicID
	}
	return send.Subscribed(ep, ev.Type)
}

// deliver makes the delivery of ev to ep by its route: a first attempt (adm.done is its
// release), a cancelled row, or a resource (deferred past the live caps); the last two on
// ep's lanes.
func (w *Dispatcher) deliver(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, adm admission, p *eventProgress) error {
	if adm.route == RouteFirstAttempt {
		secret, err := SigningSecret(ctx, w.Client, w.Reader, ep)
		if err != nil {
			adm.done()
			return err
		}
		if secret != "" {
			metrics.WebhookDeliveryRouted(string(adm.route), adm.rule)
			p.left.Add(1)
			w.jobs.Add(1)
			go w.firstAttempt(ctx, ev, ep, secret, adm.done, adm.rule == ProbeWhileDeferred.Name, p)
			return nil
		}
		adm.done()
		adm.route, adm.rule = RouteController, ruleSigningSecretNotReady
	}
	metrics.WebhookDeliveryRouted(string(adm.route), adm.rule)
	if adm.route == RouteCancelled {
		// Paused or switched off: the event is not delivered; it is listed as cancelled
		// and can be resent once the endpoint is active.
		return w.onLane(ctx, ep, func() error {
			return w.recordCancelled(ctx, ev, ep, send.DeliveryName(ev.ID.String(), ep.Name, ev.DeliverySalt()),
				"The endpoint was paused or switched off when the event occurred")
		})
	}
	return w.onLane(ctx, ep, func() error { return w.createDelivery(ctx, ev, ep, nil, nil) })
}

// firstAttempt runs an admitted first attempt, hands the delivery to the controller when it
// needs it, and finishes the event when it is the event's last part.
func (w *Dispatcher) firstAttempt(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, secret string,
	admitted func(), probe bool, p *eventProgress) {
	defer w.jobs.Done()
	ok := func() bool {
		defer admitted()
		name := send.DeliveryName(ev.ID.String(), ep.Name, ev.DeliverySalt())
		res, sentAt, outcome, err := w.Engine.FirstAttempt(ctx, FirstAttempt{Endpoint: ep, Secret: secret,
			AccountPublicID: ev.AccountPublicID, DeliveryName: name, EventID: ev.ID, EventType: ev.Type, Body: ev.Body,
			CreatedAt: w.Clock.Now(), EventCreatedAt: ev.CreatedAt, Probe: probe, OutboxID: ev.OutboxID, Last: p.lastPart})
		// A hand-off takes one of the endpoint's lanes: a hanging endpoint's waiting first
		// attempts all end together when its first ones time out.
		switch outcome {
		case Abandoned:
			return false
		case NotAttempted:
			err = w.onLane(ctx, ep, func() error { return w.createDelivery(ctx, ev, ep, nil, nil) })
		case NeedsRetry:
			err = w.onLane(ctx, ep, func() error {
				return w.createDelivery(ctx, ev, ep, func(d *switchboardv1alpha1.WebhookDelivery) {
					if d.Annotations == nil {
						d.Annotations = map[string]string{}
					}
					d.Annotations[send.AnnotationFirstAttempt] = sentAt.UTC().Format(time.RFC3339Nano)
				}, func(d *switchboardv1alpha1.WebhookDelivery) { firstAttemptFailed(d, sentAt, res) })
			})
		}
		if err != nil && ctx.Err() == nil {
			w.Log.Error(err, "first webhook attempt", "event", ev.ID, "endpoint", ep.Name)
		}
		return err == nil
	}()
	if !ok {
		p.failed.Store(true)
	}
	w.finishPart(ctx, ev, p)
}

// firstAttemptFailed is the status of a delivery whose first attempt, made by the engine,
// failed: retrying on the spec's schedule.
func firstAttemptFailed(d *switchboardv1alpha1.WebhookDelivery, sentAt time.Time, res send.Result) {
	next, _ := send.NextAttempt(1, sentAt)
	d.Status = switchboardv1alpha1.WebhookDeliveryStatus{Phase: switchboardv1alpha1.WebhookDeliveryPhaseRetrying, Attempts: 1,
		LastAttemptAt: &metav1.Time{Time: sentAt}, LastResponseCode: int32(res.StatusCode), LastError: Truncate(res.Error, MaxErrorLen),
		NextAttemptAt: &metav1.Time{Time: next}, ObservedGeneration: d.Generation}
	SetDeliveryConditions(d, switchboardv1alpha1.ReasonRetryScheduled, "Attempt failed ("+d.Status.LastError+"); retry at "+next.UTC().Format(time.RFC3339))
}

// createDelivery creates the resource of ev's delivery to ep, as meta changes it and with
// the status status sets (nil: a new delivery), or defers it in PostgreSQL when the live
// deliveries are at a cap (MaxLivePerEndpoint of ep's, MaxLive in all). A resource that
// already exists (a repeat) is left as it is.
func (w *Dispatcher) createDelivery(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint,
	meta, status func(*switchboardv1alpha1.WebhookDelivery)) error {
	d := send.NewDelivery(ep, ev.ID.String(), ev.Type, ev.ResendOf, ev.DeliverySalt())
	if meta != nil {
		meta(d)
	}
	if w.Engine.Backlog != nil {
		if _, ok := w.Engine.Backlog.ReserveIfRoom(client.ObjectKeyFromObject(d), client.ObjectKeyFromObject(ep), w.MaxLivePerEndpoint, w.MaxLive); !ok {
			// Its first attempt, if made, is not carried over: the resource starts afresh.
			return w.Store.DeferDelivery(ctx, store.DeferredDelivery{DeliveryName: d.Name, AccountID: ev.AccountID,
				EndpointPublicID: ep.Name, EventID: ev.ID, OutboxID: ev.OutboxID, EventType: ev.Type, ResendOf: ev.ResendOf,
				Salt: ev.DeliverySalt(), EventCreatedAt: ev.CreatedAt, DeferredAt: w.Clock.Now()})
		}
	}
	err := w.Client.Create(ctx, d)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil && status != nil {
		status(d)
		err = w.Client.Status().Update(ctx, d)
	}
	if err != nil && w.Engine.Backlog != nil {
		w.Engine.Backlog.Unreserve(client.ObjectKeyFromObject(d))
	}
	return err
}

// noRoom is whether a resource for a delivery to ep would be deferred now: its endpoint's or
// all live deliveries are at their cap.
func (w *Dispatcher) noRoom(ep *switchboardv1alpha1.WebhookEndpoint) bool {
	return w.Engine.Backlog != nil && !w.Engine.Backlog.HasRoom(client.ObjectKeyFromObject(ep), w.MaxLivePerEndpoint, w.MaxLive)
}

// recordCancelled lists the event's delivery to ep as cancelled (resendable), without a
// resource.
func (w *Dispatcher) recordCancelled(ctx context.Context, ev store.PendingEvent, ep *switchboardv1alpha1.WebhookEndpoint, name, why string) error {
	return w.Engine.Finish(ctx, store.FinishedDelivery{AccountPublicID: ev.AccountPublicID, EndpointPublicID: ep.Name,
		DeliveryName: name, EventID: ev.ID, EventType: ev.Type, LastError: why, CreatedAt: w.Clock.Now()},
		switchboardv1alpha1.WebhookDeliveryPhaseCancelled)
}
