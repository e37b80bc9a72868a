package delivery

import (
	"testing"

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
