package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// With a share, an endpoint gets no more slots than its share; when the share grows (a
// replica left the fleet), Grown lets the waiting first attempt and a parked delivery in.
func TestSlotsHoldTheShareAndGrow(t *testing.T) {
	var woken []types.NamespacedName
	s := NewSlots(8, func(d types.NamespacedName) bool { woken = append(woken, d); return true })
	var share atomic.Int32
	share.Store(2)
	ep := types.NamespacedName{Namespace: "sb-a", Name: "wh-1"}
	s.SetShare(func(types.NamespacedName) int { return int(share.Load()) })

	r1, ok1 := s.Acquire(ep, types.NamespacedName{Name: "d1"})
	r2, err := s.AcquireWait(context.Background(), ep)
	if !ok1 || err != nil {
		t.Fatalf("the first two slots of a share of 2: %v %v", ok1, err)
	}
	if _, ok := s.Acquire(ep, types.NamespacedName{Name: "d3"}); ok {
		t.Fatal("a third slot with a share of 2")
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.AcquireWait(ctx, ep)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a waiter got a slot beyond the share: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	share.Store(4)
	s.Grown()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the share grew: %v", err)
	}
	if len(woken) != 1 || woken[0].Name != "d3" {
		t.Fatalf("woken %v, want the parked d3", woken)
	}
	if _, ok := s.Acquire(ep, types.NamespacedName{Name: "d3"}); !ok {
		t.Fatal("the woken delivery found no slot in a share of 4 with 3 taken")
	}

	// A share that shrinks below what is in use lets nothing in until enough are released.
	share.Store(1)
	r1()
	r2()
	if _, ok := s.Acquire(ep, types.NamespacedName{Name: "d4"}); ok {
		t.Fatal("a slot while the in-use slots are still over the shrunk share")
	}
}
