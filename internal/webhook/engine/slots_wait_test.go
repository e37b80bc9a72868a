package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// waitersOf is how many AcquireWait callers wait for ep's slots.
func waitersOf(s *Slots, ep types.NamespacedName) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters[ep])
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: not within 5 s", what)
	}
}

// oneSlotHeld is Slots of one slot an endpoint, with ep's slot taken (held gives it back).
func oneSlotHeld(t *testing.T) (s *Slots, ep types.NamespacedName, held func()) {
	t.Helper()
	s = NewSlots(1, func(types.NamespacedName) bool { return true })
	ep = types.NamespacedName{Namespace: "sb-a", Name: "wh-1"}
	held, err := s.AcquireWait(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	return s, ep, held
}

// First attempts waiting for an endpoint's slot get it in the order they came, one per
// release.
func TestSlotsServeWaitersInOrder(t *testing.T) {
	s, ep, held := oneSlotHeld(t)
	order := queueWaiters(t, s, ep, 5)
	held()
	if got, want := order(), []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("waiters got the slot in the order %v, want %v", got, want)
	}
}

// Waiters that Grown woke with no slot free after all go back to their places: the order
// they came in still holds.
func TestSlotsKeepTheWaitersOrderThroughGrown(t *testing.T) {
	s, ep, held := oneSlotHeld(t)
	order := queueWaiters(t, s, ep, 5)
	s.Grown() // the share did not grow: each of them finds the slot still taken
	waitUntil(t, "woken waiters to queue again", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, w := range s.waiters[ep] {
			select {
			case <-w.wake:
				return false
			default:
			}
		}
		return len(s.waiters[ep]) == 5
	})
	held()
	if got, want := order(), []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("after Grown waiters got the slot in the order %v, want %v", got, want)
	}
}

// queueWaiters starts n AcquireWait callers for ep, one after the other, each releasing its
// slot at once; order waits for all of them and returns the order they got the slot in.
func queueWaiters(t *testing.T, s *Slots, ep types.NamespacedName, n int) (order func() []int) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []int
		wg  sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.AcquireWait(context.Background(), ep)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			release()
		}()
		waitUntil(t, "waiter to queue", func() bool { return waitersOf(s, ep) == i+1 })
	}
	return func() []int {
		wg.Wait()
		return got
	}
}

// A waiter whose context ends leaves the queue; when it ends just as it was woken, the wake
// goes on to the next waiter, so no release is lost.
func TestSlotsPassTheWakeOfAWaiterThatGaveUp(t *testing.T) {
	s, ep, held := oneSlotHeld(t)
	wait := func(ctx context.Context) chan error {
		got := make(chan error, 1)
		go func() {
			release, err := s.AcquireWait(ctx, ep)
			if err == nil {
				release()
			}
			got <- err
		}()
		return got
	}
	// Gave up while waiting: it leaves the queue.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := wait(ctx)
	waitUntil(t, "first waiter to queue", func() bool { return waitersOf(s, ep) == 1 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	if n := waitersOf(s, ep); n != 0 {
		t.Fatalf("%d waiters after the only one gave up", n)
	}

	// Woken and giving up at once: the next waiter is not left waiting.
	ctx, cancel = context.WithCancel(context.Background())
	first := wait(ctx)
	waitUntil(t, "first waiter to queue", func() bool { return waitersOf(s, ep) == 1 })
	second := wait(context.Background())
	waitUntil(t, "second waiter to queue", func() bool { return waitersOf(s, ep) == 2 })
	s.mu.Lock()
	s.wakeWaiterLocked(ep) // as a release does, with the slot still held
	cancel()
	s.mu.Unlock()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the woken waiter whose context ended: %v", err)
	}
	held()
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second waiter did not get the released slot")
	}
}
