package engine

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// The engine outlives the leader's terms: a released slot wakes its parked delivery on the
// channel of the latest term's reconciler only, not on an earlier term's.
func TestListenParkedWakesTheLatestListenerOnly(t *testing.T) {
	e := &Engine{Slots: NewSlots(1, func(types.NamespacedName) bool { return false })}
	ep := types.NamespacedName{Namespace: "sb-a", Name: "wh-1"}

	earlier := e.ListenParked()
	release, ok := e.Slots.Acquire(ep, types.NamespacedName{Namespace: "sb-a", Name: "d1"})
	if !ok {
		t.Fatal("the only slot of an idle endpoint")
	}
	if _, ok := e.Slots.Acquire(ep, types.NamespacedName{Namespace: "sb-a", Name: "d2"}); ok {
		t.Fatal("a second slot with a bound of 1")
	}
	latest := e.ListenParked()
	release()

	select {
	case ev := <-latest:
		if ev.Object.GetName() != "d2" {
			t.Fatalf("woke %s, want the parked d2", ev.Object.GetName())
		}
	default:
		t.Fatal("the latest listener was not woken")
	}
	select {
	case ev := <-earlier:
		t.Fatalf("an earlier term's channel was woken for %s", ev.Object.GetName())
	default:
	}
}

// A claim is due for renewal once it is a renewal interval old, and each renewal restarts
// that; a claim let go is never renewed.
func TestHeldClaimsDue(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	a, b := uuid.New(), uuid.New()
	var h heldClaims
	h.hold([]uuid.UUID{a}, t0)
	h.hold([]uuid.UUID{b}, t0.Add(3*time.Second))
	if got := h.due(t0.Add(-time.Nanosecond), t0.Add(5*time.Second)); len(got) != 0 {
		t.Fatalf("due before either is an interval old: %v", got)
	}
	if got := h.due(t0, t0.Add(5*time.Second)); len(got) != 1 || got[0] != a {
		t.Fatalf("due at 5 s with a 5 s interval: %v, want only the claim made at 0 (%v)", got, a)
	}
	got := h.due(t0.Add(5*time.Second), t0.Add(10*time.Second))
	slices.SortFunc(got, func(x, y uuid.UUID) int { return bytes.Compare(x[:], y[:]) })
	want := []uuid.UUID{a, b}
	slices.SortFunc(want, func(x, y uuid.UUID) int { return bytes.Compare(x[:], y[:]) })
	if !slices.Equal(got, want) {
		t.Fatalf("due at 10 s: %v, want both (renewed at 5 s, claimed at 3 s)", got)
	}
	h.letGo(a)
	if got := h.due(t0.Add(time.Hour), t0.Add(time.Hour)); len(got) != 1 || got[0] != b {
		t.Fatalf("after letting %v go: %v", a, got)
	}
}
