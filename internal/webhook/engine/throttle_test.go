package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func limitedEndpoint(name string, perSecond int32) *switchboardv1alpha1.WebhookEndpoint {
	ep := endpointNamed(name)
	ep.Spec.RateLimit = &perSecond
	return ep
}

// sendTimes runs n attempts through one throttle from workers goroutines at once and
// returns when each got its turn.
func sendTimes(t *testing.T, th *Throttle, ep *switchboardv1alpha1.WebhookEndpoint, n, workers int) []time.Time {
	t.Helper()
	var (
		mu    sync.Mutex
		times []time.Time
		wg    sync.WaitGroup
	)
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range workers {
		wg.Go(func() {
			for range jobs {
				if err := th.Wait(context.Background(), ep); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return times
}

// maxInWindow is the most times within any window-long interval.
func maxInWindow(times []time.Time, window time.Duration) int {
	most := 0
	for i, a := range times {
		n := 0
		for _, b := range times[i:] {
			if !b.Before(a) && b.Sub(a) < window {
				n++
			}
		}
		for _, b := range times[:i] {
			if !b.Before(a) && b.Sub(a) < window {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func TestThrottleHoldsTheRateWhateverTheConcurrency(t *testing.T) {
	th := NewThrottle(clock.RealClock{})
	ep := limitedEndpoint("whep-limited", 20)
	start := time.Now()
	times := sendTimes(t, th, ep, 30, 8)
	took := time.Since(start)
	// 30 turns at 20 a second, the bucket starting empty: the last one 1.5 s after the start.
	if took < 1400*time.Millisecond {
		t.Errorf("30 turns at 20/s took %s", took)
	}
	// A token bucket's bound: at most rate × T + 1 (its one stored turn) in any T.
	if got := maxInWindow(times, time.Second); got > 21 {
		t.Errorf("%d turns within one second, limit 20 (+1)", got)
	}
}

func TestThrottleSplitsTheLimitAcrossProcesses(t *testing.T) {
	// Two processes each with half the endpoint: together they keep the limit.
	a, b := NewThrottle(clock.RealClock{}), NewThrottle(clock.RealClock{})
	half := func(types.NamespacedName) float64 { return 0.5 }
	a.SetFraction(half)
	b.SetFraction(half)
	ep := limitedEndpoint("whep-shared", 10)
	var (
		wg     sync.WaitGroup
		ta, tb []time.Time
	)
	wg.Go(func() { ta = sendTimes(t, a, ep, 8, 4) })
	wg.Go(func() { tb = sendTimes(t, b, ep, 8, 4) })
	wg.Wait()
	// rate × T + one stored turn per process.
	if got := maxInWindow(append(ta, tb...), time.Second); got > 12 {
		t.Errorf("%d turns within one second across two processes, limit 10 (+2)", got)
	}
	if got := maxInWindow(append(ta, tb...), 1500*time.Millisecond); got > 17 {
		t.Errorf("%d turns within 1.5 s across two processes, limit 15 (+2)", got)
	}
}

func TestThrottleWithoutALimitOrWithNoShare(t *testing.T) {
	th := NewThrottle(clock.RealClock{})
	free := endpointNamed("whep-free")
	for range 1000 {
		if later, err := th.TakeTurn(context.Background(), free, 0); later != 0 || err != nil {
			t.Fatalf("an endpoint without a limit waited %s (%v)", later, err)
		}
	}
	th.SetFraction(func(types.NamespacedName) float64 { return 0 })
	if later, _ := th.TakeTurn(context.Background(), limitedEndpoint("whep-elsewhere", 100), time.Hour); later != notThisProcess {
		t.Errorf("a process with no part of the limit got a turn (%s)", later)
	}
	var nilThrottle *Throttle
	if later, err := nilThrottle.TakeTurn(context.Background(), limitedEndpoint("x", 1), 0); later != 0 || err != nil {
		t.Error("a nil throttle held an attempt back")
	}
}

func TestTakeTurnGivesBackATurnItDoesNotWaitFor(t *testing.T) {
	th := NewThrottle(clock.RealClock{})
	ep := limitedEndpoint("whep-slow", 1)
	later, err := th.TakeTurn(context.Background(), ep, 10*time.Millisecond)
	if err != nil || later <= 0 || later > time.Second {
		t.Fatalf("the first turn of an empty 1/s bucket: later %s, %v", later, err)
	}
	// Given back: asking again, the turn is no later than before.
	again, _ := th.TakeTurn(context.Background(), ep, 10*time.Millisecond)
	if again > later {
		t.Errorf("a turn given back was kept: %s then %s", later, again)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := th.TakeTurn(ctx, ep, time.Hour); err == nil {
		t.Error("waiting with an ended context did not end")
	}
}
