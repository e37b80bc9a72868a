package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestOutliving(t *testing.T) {
	const grace = 10 * time.Second
	for _, tc := range []struct {
		name  string
		grace time.Duration
		cause error // how ctx ends
		// endsAt is how long after ctx ends the attempt's context ends (-1: at once).
		endsAt time.Duration
	}{
		{name: "a stopping process: the grace", grace: grace, cause: context.Canceled, endsAt: grace},
		{name: "the replica lost its place in the fleet: at once", grace: grace, cause: ErrStopAttempts, endsAt: -1},
		{name: "a wrapped ErrStopAttempts: at once", grace: grace, cause: errors.Join(errors.New("standing lost"), ErrStopAttempts), endsAt: -1},
		{name: "no grace: at once", grace: -1, cause: context.Canceled, endsAt: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			ctx, stop := context.WithCancelCause(context.Background())
			out, cancel := outliving(ctx, tc.grace, clk)
			defer cancel()
			if out.Err() != nil {
				t.Fatal("ended before ctx did")
			}
			stop(tc.cause)
			if tc.endsAt < 0 {
				waitDone(t, out)
				return
			}
			// The timer is set when ctx ends (context.AfterFunc runs in its own goroutine).
			deadline := time.Now().Add(5 * time.Second)
			for !clk.HasWaiters() {
				if time.Now().After(deadline) {
					t.Fatal("no grace timer was set")
				}
				time.Sleep(time.Millisecond)
			}
			clk.Step(tc.endsAt - time.Nanosecond)
			time.Sleep(20 * time.Millisecond)
			if out.Err() != nil {
				t.Fatalf("ended %v after ctx, before the grace of %v", tc.endsAt-time.Nanosecond, tc.endsAt)
			}
			clk.Step(time.Nanosecond)
			waitDone(t, out)
		})
	}
}

// An attempt that finishes before ctx ends leaves nothing behind: cancel ends its context,
// and ctx ending later sets no timer.
func TestOutlivingCancelledFirst(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, stop := context.WithCancel(context.Background())
	out, cancel := outliving(ctx, time.Minute, clk)
	cancel()
	waitDone(t, out)
	stop()
	time.Sleep(20 * time.Millisecond)
	if clk.HasWaiters() {
		t.Fatal("a grace timer was set for an attempt already over")
	}
}

func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt's context did not end")
	}
}
