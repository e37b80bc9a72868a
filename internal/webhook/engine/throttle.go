package engine

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Throttle holds the attempts to an endpoint with spec.rateLimit to that many a second
// across the fleet: this process sends at its fraction of the limit, the same fraction of
// the endpoint that its Slots hold, so the replicas' rates add up to the limit. Each
// process keeps a token bucket per endpoint (golang.org/x/time/rate) that holds one attempt
// and starts empty: over any T seconds the endpoint gets at most limit × T attempts plus
// one per replica (a turn a bucket stored while idle). An attempt held back waits; it is
// not a failure.
type Throttle struct {
	clock clock.PassiveClock
	// fraction, when set, is this process's part (0 to 1) of an endpoint's limit; unset:
	// all of it.
	fraction func(endpoint types.NamespacedName) float64

	mu       sync.Mutex
	limiters map[types.NamespacedName]*rate.Limiter
}

// NewThrottle makes an empty Throttle reading time from clk (a real clock: it only paces,
// and nothing recorded comes from it).
func NewThrottle(clk clock.PassiveClock) *Throttle {
	return &Throttle{clock: clk, limiters: map[types.NamespacedName]*rate.Limiter{}}
}

// SetFraction makes each endpoint's rate this process's fraction of its limit.
func (t *Throttle) SetFraction(fraction func(endpoint types.NamespacedName) float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fraction = fraction
}

// notThisProcess is how long an attempt waits when this process has no part of the
// endpoint's limit now (it holds none of its slots either, so it makes none).
const notThisProcess = time.Second

// Reserve takes the endpoint's next turn: delay is how long until it (0: now), and cancel
// gives the turn back when the caller does not wait for it. An endpoint without a limit
// always has its turn now.
func (t *Throttle) Reserve(ep *switchboardv1alpha1.WebhookEndpoint) (delay time.Duration, cancel func()) {
	if ep.Spec.RateLimit == nil {
		// No lock on the path of every unlimited attempt; a bucket left from a limit since
		// removed is dropped with its endpoint (Forget).
		return 0, func() {}
	}
	key := client.ObjectKeyFromObject(ep)
	now := t.clock.Now()
	t.mu.Lock()
	limit := float64(*ep.Spec.RateLimit)
	if t.fraction != nil {
		limit *= t.fraction(key)
	}
	lim := t.limiters[key]
	switch {
	case lim == nil:
		lim = rate.NewLimiter(rate.Limit(limit), 1)
		lim.ReserveN(now, 1) // start empty
		t.limiters[key] = lim
	case lim.Limit() != rate.Limit(limit):
		lim.SetLimitAt(now, rate.Limit(limit))
	}
	t.mu.Unlock()
	if limit <= 0 {
		return notThisProcess, func() {}
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return notThisProcess, func() {}
	}
	return r.DelayFrom(now), func() { r.CancelAt(t.clock.Now()) }
}

// Wait waits for the endpoint's turn; err is ctx's when it ends first (the turn is then
// given back).
func (t *Throttle) Wait(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint) error {
	for {
		later, err := t.TakeTurn(ctx, ep, time.Duration(math.MaxInt64))
		if err != nil || later == 0 {
			return err
		}
		// This process has no part of the limit now: look again later.
		timer := time.NewTimer(later)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// TakeTurn waits for the endpoint's turn if it comes within maxWait and returns 0; otherwise
// it gives the turn back at once and returns how long until it would have come (a controller
// worker requeues rather than wait that long). err is ctx's when it ends first.
func (t *Throttle) TakeTurn(ctx context.Context, ep *switchboardv1alpha1.WebhookEndpoint, maxWait time.Duration) (later time.Duration, err error) {
	if t == nil {
		return 0, nil
	}
	delay, cancel := t.Reserve(ep)
	if delay <= 0 {
		return 0, nil
	}
	if delay > maxWait || delay == notThisProcess {
		cancel()
		return delay, nil
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		cancel()
		return 0, ctx.Err()
	case <-timer.C:
		return 0, nil
	}
}

// Forget drops a removed endpoint's bucket.
func (t *Throttle) Forget(endpoint types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.limiters, endpoint)
}
