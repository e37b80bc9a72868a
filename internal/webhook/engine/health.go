package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// An endpoint's health on its status — failingSince (set by the first failure, cleared by a
// success), lastDeliveryAt and lastResponseCode — is written by HealthWriter, from the
// outcomes of the delivery workers' attempts. One
// write per attempt would cost an API-server write for most attempts when an endpoint's
// answers are mixed (failingSince flips with every failure after a success), so outcomes
// are coalesced: an endpoint's status is written at most once per Gap, with the
// net result of the attempts since the last write, and only when that changes failingSince
// or the response code, or the last write is an hour old.

// DefaultHealthWriteGap is HealthWriter.Gap's default. The 24-hour switch-off and the
// dispatcher's 10-second "failing" grace read failingSince; a second's delay moves neither.
const DefaultHealthWriteGap = time.Second

// healthRefresh is how old lastDeliveryAt may get before an unchanged outcome is written.
// Most endpoints of a fleet receive less than one delivery a minute, so a shorter refresh
// would make nearly every delivery an API-server write (and etcd revision) for a field only
// people read.
const healthRefresh = time.Hour

// attemptOutcome is one attempt's result, as the endpoint's status records it.
type attemptOutcome struct {
	ok   bool
	code int
	at   time.Time
}

// applyAttemptOutcomes applies outcomes, in the order they were sent, to st and reports
// whether the result is worth a write.
func applyAttemptOutcomes(st *switchboardv1alpha1.WebhookEndpointStatus, outcomes []attemptOutcome) bool {
	if len(outcomes) == 0 {
		return false
	}
	outcomes = slices.Clone(outcomes)
	slices.SortStableFunc(outcomes, func(a, b attemptOutcome) int { return a.at.Compare(b.at) })
	failingBefore, codeBefore := st.FailingSince, st.LastResponseCode
	for _, o := range outcomes {
		switch {
		case o.ok:
			st.FailingSince = nil
		case st.FailingSince == nil:
			st.FailingSince = &metav1.Time{Time: o.at}
		}
	}
	last := outcomes[len(outcomes)-1]
	stale := st.LastDeliveryAt == nil || last.at.Sub(st.LastDeliveryAt.Time) > healthRefresh
	if equalTimes(failingBefore, st.FailingSince) && int32(last.code) == codeBefore && !stale {
		return false
	}
	st.LastDeliveryAt = &metav1.Time{Time: last.at}
	st.LastResponseCode = int32(last.code)
	return true
}

// healthWriteWait is how long a write must wait so that writes to one endpoint are at
// least gap apart (0: write now).
func healthWriteWait(lastWrite, now time.Time, gap time.Duration) time.Duration {
	if lastWrite.IsZero() {
		return 0
	}
	return max(0, gap-now.Sub(lastWrite))
}

func equalTimes(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// endpointHealthState is one endpoint's unwritten outcomes and its last write, and the
// versions that write superseded (which the cache may still show).
type endpointHealthState struct {
	mu         sync.Mutex
	outcomes   []attemptOutcome
	flushing   bool // a write is scheduled or running
	lastWrite  time.Time
	last       *switchboardv1alpha1.WebhookEndpoint
	superseded map[string]bool
}

// HealthWriter writes endpoints' health (see above). Its writes run outside any reconcile.
type HealthWriter struct {
	// Client reads endpoints (through the cache) and patches their status.
	Client client.Client
	// Gap is the least time between two writes of one endpoint's health (default 1 s),
	// timed by Timer (default real time, also when the controllers' clock is a fake: it
	// spaces API writes, it decides nothing).
	Gap   time.Duration
	Timer clock.Clock
	Log   logr.Logger

	mu     sync.Mutex
	states map[types.NamespacedName]*endpointHealthState
}

// NewHealthWriter makes a writer; a zero gap and a nil timer take their defaults.
func NewHealthWriter(c client.Client, gap time.Duration, timer clock.Clock, log logr.Logger) *HealthWriter {
	if gap <= 0 {
		gap = DefaultHealthWriteGap
	}
	if timer == nil {
		timer = clock.RealClock{}
	}
	return &HealthWriter{Client: c, Gap: gap, Timer: timer, Log: log, states: map[types.NamespacedName]*endpointHealthState{}}
}

func (w *HealthWriter) state(key types.NamespacedName) *endpointHealthState {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.states[key]
	if h == nil {
		h = &endpointHealthState{}
		w.states[key] = h
	}
	return h
}

// Forget drops what is kept about a deleted endpoint.
func (w *HealthWriter) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.states, key)
}

// Record queues an attempt's outcome for the endpoint's status; a writer for the endpoint
// is started unless one is already waiting or writing.
func (w *HealthWriter) Record(ep *switchboardv1alpha1.WebhookEndpoint, ok bool, code int, at time.Time) {
	key := client.ObjectKeyFromObject(ep)
	h := w.state(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outcomes = append(h.outcomes, attemptOutcome{ok: ok, code: code, at: at})
	if !h.flushing {
		h.flushing = true
		go w.write(key, h, healthWriteWait(h.lastWrite, w.Timer.Now(), w.Gap))
	}
}

// write waits, then writes the outcomes queued by then in one status patch;
// it goes on (a gap later) while more arrived during the write.
func (w *HealthWriter) write(key types.NamespacedName, h *endpointHealthState, wait time.Duration) {
	log := w.Log.WithValues("endpoint", key)
	for {
		if wait > 0 {
			<-w.Timer.After(wait)
		}
		h.mu.Lock()
		outcomes := h.outcomes
		h.outcomes = nil
		h.mu.Unlock()

		if err := w.patch(key, h, outcomes); err != nil {
			log.Error(err, "write endpoint health")
		}

		h.mu.Lock()
		h.lastWrite = w.Timer.Now()
		if len(h.outcomes) == 0 {
			h.flushing = false
			h.mu.Unlock()
			return
		}
		wait = w.Gap
		h.mu.Unlock()
	}
}

// patch applies outcomes to the endpoint's status and writes it when that is
// worth it. It starts from this controller's own last write while the cache still shows a
// version from before it.
func (w *HealthWriter) patch(key types.NamespacedName, h *endpointHealthState, outcomes []attemptOutcome) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	if err := w.Client.Get(ctx, key, ep); err != nil {
		return client.IgnoreNotFound(err)
	}
	switch {
	case h.last == nil || h.last.UID != ep.UID:
	case h.superseded[ep.ResourceVersion]:
		ep = h.last.DeepCopy()
	case ep.ResourceVersion == h.last.ResourceVersion:
		clear(h.superseded) // caught up
	}
	base := ep.DeepCopy()
	if !applyAttemptOutcomes(&ep.Status, outcomes) {
		return nil
	}
	if err := w.Client.Status().Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		h.last = nil
		clear(h.superseded)
		return client.IgnoreNotFound(err)
	}
	if h.superseded == nil || len(h.superseded) > 1000 {
		h.superseded = map[string]bool{}
	}
	h.superseded[base.ResourceVersion] = true
	h.last = ep // Patch left the server's answer in ep
	return nil
}
