package engine

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"
)

// DefaultStopGrace is how long first attempts already sent may go on once the process is
// stopping: the attempt timeout, so that every answer that can still come does. It fits in
// the manager's graceful shutdown (30 s) and the pod's termination grace period (30 s).
const DefaultStopGrace = 10 * time.Second

// ErrStopAttempts, as the cause that ends the dispatcher's context
// (context.WithCancelCause), ends the first attempts in flight at once instead of after the
// stop grace: the replica has lost its place in the fleet, and the others are taking the
// slots those attempts hold.
var ErrStopAttempts = errors.New("this replica's attempts must stop at once")

// outliving returns the context of an attempt already under way: it ends grace after ctx
// ends, or with ctx when ctx ends with ErrStopAttempts or grace is not positive. A stopping
// process thus records the answers of what it sent, instead of releasing the claims and
// having another replica send the same events again to receivers that already have them.
// timer measures the grace (real time, against the process's shutdown deadline).
func outliving(ctx context.Context, grace time.Duration, timer clock.Clock) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if grace <= 0 || errors.Is(context.Cause(ctx), ErrStopAttempts) {
			cancel()
			return
		}
		t := timer.NewTimer(grace)
		go func() {
			defer t.Stop()
			select {
			case <-t.C():
				cancel()
			case <-out.Done():
			}
		}()
	})
	return out, func() {
		stop()
		cancel()
	}
}

// stopTimer is StopTimer, real time when unset.
func (e *Engine) stopTimer() clock.Clock {
	if e.StopTimer == nil {
		return clock.RealClock{}
	}
	return e.StopTimer
}
