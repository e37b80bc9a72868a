/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestEventsToDispatch(t *testing.T) {
	for _, c := range []struct {
		name                                  string
		maxPending, load, batch, fanOut, want int
	}{
		{"no bound: a full batch", 0, 5000, 200, 5, 200},
		{"empty backlog: a full batch", 2000, 0, 200, 5, 200},
		{"room for 100 events of 5 deliveries", 2000, 1500, 200, 5, 100},
		{"full", 2000, 2000, 200, 5, 0},
		{"over (deliveries made elsewhere)", 2000, 2300, 200, 5, 0},
		{"room for fewer than a quarter of the bound's events: wait", 2000, 1950, 200, 5, 0},
		{"exactly a quarter", 2000, 1500, 200, 5, 100},
		{"tiny bound still moves", 5, 0, 200, 5, 1},
		{"tiny bound, one pending: wait", 5, 1, 200, 5, 0},
		{"one endpoint per account", 100, 60, 200, 1, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eventsToDispatch(c.maxPending, c.load, c.batch, c.fanOut)
			if got != c.want {
				t.Errorf("eventsToDispatch(%d, %d, %d, %d) = %d, want %d", c.maxPending, c.load, c.batch, c.fanOut, got, c.want)
			}
			if got*c.fanOut > max(0, c.maxPending-c.load) && c.maxPending > 0 {
				t.Errorf("%d events of %d deliveries exceed the room of %d", got, c.fanOut, c.maxPending-c.load)
			}
		})
	}
}

func TestBacklogLoadLeavesOutEndpointsFailingPastGraceOrStalled(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	a, b, c := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}
	pending := map[types.NamespacedName]int{a: 10, b: 20, c: 30}
	for _, tc := range []struct {
		name    string
		failing map[types.NamespacedName]time.Time
		stalled []types.NamespacedName
		want    int
	}{
		{"all healthy", nil, nil, 60},
		{"b failing for a moment (a 500 among successes)", map[types.NamespacedName]time.Time{b: now.Add(-time.Second)}, nil, 60},
		{"b failing past the grace (hanging)", map[types.NamespacedName]time.Time{b: now.Add(-failingGrace)}, nil, 40},
		{"b and c failing for a minute", map[types.NamespacedName]time.Time{b: now.Add(-time.Minute), c: now.Add(-time.Minute)}, nil, 10},
		{"c stalled (hanging, its first timeout still to come)", nil, []types.NamespacedName{c}, 30},
		{"b failing past the grace, c stalled", map[types.NamespacedName]time.Time{b: now.Add(-time.Minute)}, []types.NamespacedName{c}, 10},
	} {
		var stalled func(types.NamespacedName) bool
		if tc.stalled != nil {
			stalled = func(ep types.NamespacedName) bool { return slices.Contains(tc.stalled, ep) }
		}
		if got := backlogLoad(pending, tc.failing, now, failingGrace, stalled); got != tc.want {
			t.Errorf("%s: load %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The backlog counts a reservation until the cache shows the delivery, a delivery until its
// first attempt, and forgets failed reservations and deleted deliveries.
func TestDeliveryBacklogCounts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	b := NewBacklog(clk)
	ep := types.NamespacedName{Namespace: "acct-1", Name: "whep-a"}
	d := func(name string, attempts int32, phase switchboardv1alpha1.WebhookDeliveryPhase) *switchboardv1alpha1.WebhookDelivery {
		return &switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: ep.Namespace, Name: name},
			Spec:   switchboardv1alpha1.WebhookDeliverySpec{EndpointName: ep.Name},
			Status: switchboardv1alpha1.WebhookDeliveryStatus{Attempts: attempts, Phase: phase}}
	}
	key := func(name string) types.NamespacedName {
		return types.NamespacedName{Namespace: ep.Namespace, Name: name}
	}
	check := func(step string, wantPending, wantLive int) {
		t.Helper()
		if p, l := b.Load(); p != wantPending || l != wantLive {
			t.Errorf("%s: pending %d, live %d; want %d, %d", step, p, l, wantPending, wantLive)
		}
	}
	b.ReserveIfRoom(key("d1"), ep, 0, 0)
	b.ReserveIfRoom(key("d2"), ep, 0, 0)
	b.ReserveIfRoom(key("d3"), ep, 0, 0)
	check("three reserved", 3, 3)
	b.seen(d("d1", 0, ""))
	b.ReserveIfRoom(key("d1"), ep, 0, 0) // a repeat of a creation
	check("one seen, reserved again", 3, 3)
	b.Unreserve(key("d3"))
	check("creation failed", 2, 2)
	b.Unreserve(key("d1")) // seen: a reservation no longer
	check("unreserve of a seen delivery", 2, 2)
	b.seen(d("d2", 1, switchboardv1alpha1.WebhookDeliveryPhaseRetrying))
	check("d2 attempted and retrying", 1, 2)
	select {
	case <-b.Changed():
	default:
		t.Error("no change signalled when d2 stopped pending")
	}
	b.gone(toolscache.DeletedFinalStateUnknown{Obj: d("d1", 0, "")})
	b.gone(d("d2", 1, switchboardv1alpha1.WebhookDeliveryPhaseRetrying))
	check("both deleted", 0, 0)

	// An endpoint failing past the grace holds its backlog without counting.
	b.seen(d("d4", 0, ""))
	failingEp := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ep.Namespace, Name: ep.Name},
		Status: switchboardv1alpha1.WebhookEndpointStatus{FailingSince: &metav1.Time{Time: clk.Now()}}}
	b.endpointSeen(failingEp)
	check("failing a moment", 1, 1)
	clk.Step(failingGrace)
	check("failing past the grace", 0, 1)
	b.endpointSeen(&switchboardv1alpha1.WebhookEndpoint{ObjectMeta: failingEp.ObjectMeta})
	check("recovered", 1, 1)
}

func TestReserveIfRoomBoundsOneEndpoint(t *testing.T) {
	b := NewBacklog(clocktesting.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)))
	stuck := types.NamespacedName{Namespace: "acct-1", Name: "whep-stuck"}
	other := types.NamespacedName{Namespace: "acct-1", Name: "whep-other"}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "acct-1", Name: name} }
	try := func(step, delivery string, ep types.NamespacedName, wantLive int, wantOK bool) {
		t.Helper()
		if live, ok := b.ReserveIfRoom(key(delivery), ep, 2, 0); live != wantLive || ok != wantOK {
			t.Errorf("%s: live %d, ok %v; want %d, %v", step, live, ok, wantLive, wantOK)
		}
	}
	try("first", "d1", stuck, 1, true)
	try("second", "d2", stuck, 2, true)
	try("third is past the bound", "d3", stuck, 2, false)
	try("a repeat of a known creation still may", "d1", stuck, 2, true)
	try("another endpoint has its own bound", "o1", other, 1, true)
	// A retrying delivery still counts; a removed one makes room.
	b.seen(&switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "acct-1", Name: "d1"},
		Spec: switchboardv1alpha1.WebhookDeliverySpec{EndpointName: stuck.Name}, Status: switchboardv1alpha1.WebhookDeliveryStatus{Attempts: 1, Phase: switchboardv1alpha1.WebhookDeliveryPhaseRetrying}})
	try("retrying counts", "d3", stuck, 2, false)
	b.gone(&switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "acct-1", Name: "d1"}, Spec: switchboardv1alpha1.WebhookDeliverySpec{EndpointName: stuck.Name}})
	try("room after a removal", "d3", stuck, 2, true)
	if _, ok := b.ReserveIfRoom(key("d4"), stuck, 0, 0); !ok {
		t.Error("no bound (0) refused a reservation")
	}
	// The bound on all live deliveries: four live, a fifth endpoint's first is refused at 4.
	if _, ok := b.ReserveIfRoom(key("f1"), types.NamespacedName{Namespace: "acct-2", Name: "whep-fresh"}, 2, 4); ok {
		t.Error("a reservation past the bound on all live deliveries was allowed")
	}
	if _, ok := b.ReserveIfRoom(key("f1"), types.NamespacedName{Namespace: "acct-2", Name: "whep-fresh"}, 2, 5); !ok {
		t.Error("a reservation within both bounds was refused")
	}
	select {
	case <-b.Freed():
	default:
		t.Error("removing a live delivery did not signal Freed")
	}
}
