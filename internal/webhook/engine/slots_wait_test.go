package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
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
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.AcquireWait(context.Background(), ep)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			release()
		}()
		waitUntil(t, "waiter to queue", func() bool { return waitersOf(s, ep) == i+1 })
	}
	held()
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("waiters got the slot in the order %v, want %v", order, want)
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
