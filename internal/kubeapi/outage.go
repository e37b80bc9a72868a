package kubeapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OutageReader reads from kube-apiserver while it answers, and from a watched cache
// (informers) while it does not, so that what needs only objects that existed before an
// outage keeps working during it. A live read that fails as Unavailable switches it to the
// cache at once (that read is answered from the cache too); while switched, no read waits
// on kube-apiserver: one probe at a time (Ping, every Recheck) finds out when it answers
// again, and reads are live from then on.
//
// Reading live while kube-apiserver answers keeps read-after-write: an object created a
// moment ago is seen by the next read even if its watch event has not arrived. During an
// outage nothing can be created, so the cache lacks at most what was created in the moment
// before it began (its watch events still on the way).
type OutageReader struct {
	Live  client.Reader
	Cache client.Reader
	// Ping asks kube-apiserver whether it answers (kubeapi.NewPing).
	Ping func(context.Context) error
	// LiveTimeout bounds a live read (default 1 s): the longest a read waits before an
	// outage is noticed.
	LiveTimeout time.Duration
	// Recheck is how often kube-apiserver is probed during an outage (default 1 s).
	Recheck time.Duration
	// Clock paces the probes (default the real clock).
	Clock clock.PassiveClock

	down      atomic.Bool
	probing   atomic.Bool
	mu        sync.Mutex
	lastProbe time.Time
}

var _ client.Reader = (*OutageReader)(nil)

// Down reports whether reads are answered from the cache now.
func (r *OutageReader) Down() bool { return r.down.Load() }

// Get reads key live, or from the cache during an outage.
func (r *OutageReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.read(ctx, func(ctx context.Context, rd client.Reader) error { return rd.Get(ctx, key, obj, opts...) })
}

// List lists live, or from the cache during an outage.
func (r *OutageReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.read(ctx, func(ctx context.Context, rd client.Reader) error { return rd.List(ctx, list, opts...) })
}

func (r *OutageReader) read(ctx context.Context, do func(context.Context, client.Reader) error) error {
	if r.down.Load() {
		r.probe(ctx)
		if r.down.Load() {
			return do(ctx, r.Cache)
		}
	}
	liveCtx, cancel := context.WithTimeout(ctx, r.liveTimeout())
	err := do(liveCtx, r.Live)
	cancel()
	if err == nil || !Unavailable(err) || ctx.Err() != nil {
		return err
	}
	r.mu.Lock()
	r.lastProbe = r.clock().Now()
	r.mu.Unlock()
	r.down.Store(true)
	return do(ctx, r.Cache)
}

// probe starts one Ping in the background when Recheck has passed since the last one; its
// success ends the outage.
func (r *OutageReader) probe(ctx context.Context) {
	r.mu.Lock()
	due := r.clock().Since(r.lastProbe) >= r.recheck()
	if due {
		r.lastProbe = r.clock().Now()
	}
	r.mu.Unlock()
	if !due || !r.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.probing.Store(false)
		pingCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.liveTimeout())
		defer cancel()
		if r.Ping(pingCtx) == nil {
			r.down.Store(false)
		}
	}()
}

func (r *OutageReader) liveTimeout() time.Duration {
	if r.LiveTimeout <= 0 {
		return time.Second
	}
	return r.LiveTimeout
}

func (r *OutageReader) recheck() time.Duration {
	if r.Recheck <= 0 {
		return time.Second
	}
	return r.Recheck
}

func (r *OutageReader) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}
