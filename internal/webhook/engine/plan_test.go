package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	active := func(mut ...func(*switchboardv1alpha1.WebhookEndpoint)) *switchboardv1alpha1.WebhookEndpoint {
		ep := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "whep-a", Namespace: "acct", UID: "ep-1"}}
		for _, m := range mut {
			m(ep)
		}
		return ep
	}
	pending := func(mut ...func(*switchboardv1alpha1.WebhookDelivery)) *switchboardv1alpha1.WebhookDelivery {
		d := &switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Name: "whdl-1", Namespace: "acct",
			OwnerReferences: []metav1.OwnerReference{{Kind: "WebhookEndpoint", Name: "whep-a", UID: "ep-1"}}},
			Spec: switchboardv1alpha1.WebhookDeliverySpec{EndpointName: "whep-a"}}
		for _, m := range mut {
			m(d)
		}
		return d
	}
	retryAt := func(at time.Time) func(*switchboardv1alpha1.WebhookDelivery) {
		return func(d *switchboardv1alpha1.WebhookDelivery) {
			d.Status.Phase, d.Status.Attempts, d.Status.NextAttemptAt = switchboardv1alpha1.WebhookDeliveryPhaseRetrying, 1, &metav1.Time{Time: at}
		}
	}
	phase := func(p switchboardv1alpha1.WebhookDeliveryPhase) func(*switchboardv1alpha1.WebhookDelivery) {
		return func(d *switchboardv1alpha1.WebhookDelivery) { d.Status.Phase = p }
	}
	firstAttemptAt := func(at string) func(*switchboardv1alpha1.WebhookDelivery) {
		return func(d *switchboardv1alpha1.WebhookDelivery) {
			d.Annotations = map[string]string{send.AnnotationFirstAttempt: at}
		}
	}
	deleting := metav1.NewTime(now)
	cases := []struct {
		name string
		d    *switchboardv1alpha1.WebhookDelivery
		ep   *switchboardv1alpha1.WebhookEndpoint
		want Decision
	}{
		{"new delivery to an active endpoint", pending(), active(), Decision{Action: Attempt}},
		{"retry due", pending(retryAt(now)), active(), Decision{Action: Attempt}},
		{"retry overdue", pending(retryAt(now.Add(-time.Hour))), active(), Decision{Action: Attempt}},
		{"retry not yet due", pending(retryAt(now.Add(5 * time.Minute))), active(), Decision{Action: Wait, Until: now.Add(5 * time.Minute)}},
		{"first attempt made by the engine, status not written yet", pending(firstAttemptAt(now.Add(-time.Second).Format(time.RFC3339Nano))), active(),
			Decision{Action: Wait, Until: now.Add(59 * time.Second)}},
		{"first attempt made by the engine a minute ago", pending(firstAttemptAt(now.Add(-time.Minute).Format(time.RFC3339Nano))), active(),
			Decision{Action: Attempt}},
		{"an unreadable first-attempt mark is ignored", pending(firstAttemptAt("soon")), active(), Decision{Action: Attempt}},
		{"status written: it decides, not the mark", pending(retryAt(now.Add(5*time.Minute)), firstAttemptAt(now.Format(time.RFC3339Nano))), active(),
			Decision{Action: Wait, Until: now.Add(5 * time.Minute)}},
		{"endpoint gone", pending(), nil, Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotFound, Message: "The endpoint was removed"}},
		{"endpoint being deleted", pending(), active(func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.DeletionTimestamp = &deleting }),
			Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotFound, Message: "The endpoint was removed"}},
		{"endpoint created again under the same name", pending(), active(func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.UID = "ep-2" }),
			Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotFound, Message: "The endpoint was removed"}},
		{"delivery made by hand, no owner", pending(func(d *switchboardv1alpha1.WebhookDelivery) { d.OwnerReferences = nil }), active(),
			Decision{Action: Attempt}},
		{"endpoint paused", pending(retryAt(now.Add(time.Hour))), active(func(ep *switchboardv1alpha1.WebhookEndpoint) { ep.Spec.Paused = true }),
			Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotActive, Message: "The endpoint is paused or switched off; resend it once active"}},
		{"succeeded before the manager stopped", pending(phase(switchboardv1alpha1.WebhookDeliveryPhaseSucceeded)), active(), Decision{Action: Finish}},
		{"failed, endpoint gone since", pending(phase(switchboardv1alpha1.WebhookDeliveryPhaseFailed)), nil, Decision{Action: Finish}},
		{"cancelled", pending(phase(switchboardv1alpha1.WebhookDeliveryPhaseCancelled)), active(), Decision{Action: Finish}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Plan(c.d, c.ep, now); got != c.want {
				t.Errorf("Plan = %+v, want %+v", got, c.want)
			}
		})
	}
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "acct", Name: name}
}

func TestSlotsBoundAnEndpointAndWakeParkedInOrder(t *testing.T) {
	var woken []types.NamespacedName
	s := NewSlots(2, func(d types.NamespacedName) bool { woken = append(woken, d); return true })
	epA, epB := key("whep-a"), key("whep-b")
	r1, ok1 := s.Acquire(epA, key("d1"))
	r2, ok2 := s.Acquire(epA, key("d2"))
	if !ok1 || !ok2 {
		t.Fatal("the first two deliveries did not get slots")
	}
	for _, d := range []string{"d3", "d4", "d3", "d5"} {
		if _, ok := s.Acquire(epA, key(d)); ok {
			t.Fatalf("%s got a third slot", d)
		}
	}
	if got := parkedAt(s, epA); got != 3 {
		t.Errorf("parked = %d, want 3 (d3 once)", got)
	}
	// Another endpoint is not held back by a full one.
	if rb, ok := s.Acquire(epB, key("b1")); !ok {
		t.Error("another endpoint's delivery found no slot")
	} else {
		rb()
	}
	s.Forget(epA, key("d4")) // deleted while parked
	r1()
	r1() // a second release gives nothing back
	if len(woken) != 1 || woken[0] != key("d3") {
		t.Fatalf("woken = %v, want [d3]", woken)
	}
	// d3 takes the freed slot; the endpoint is full again.
	r3, ok := s.Acquire(epA, key("d3"))
	if !ok {
		t.Fatal("the woken delivery found no slot")
	}
	if _, ok := s.Acquire(epA, key("d6")); ok {
		t.Fatal("a third slot after the release was taken again")
	}
	r2()
	if len(woken) != 2 || woken[1] != key("d5") {
		t.Fatalf("woken = %v, want d4 skipped (forgotten) and d5 next", woken)
	}
	r3()
	if len(woken) != 3 || woken[2] != key("d6") {
		t.Fatalf("woken = %v, want d6 last", woken)
	}
	if got := parkedAt(s, epA); got != 0 {
		t.Errorf("parked = %d after all were woken", got)
	}
}

func TestSlotsParkedDeliveryThatGetsASlotByItselfIsNotWoken(t *testing.T) {
	var woken []types.NamespacedName
	s := NewSlots(1, func(d types.NamespacedName) bool { woken = append(woken, d); return true })
	ep := key("whep-a")
	r1, _ := s.Acquire(ep, key("d1"))
	if _, ok := s.Acquire(ep, key("d2")); ok {
		t.Fatal("second slot")
	}
	r1()
	// d2 was woken and takes the slot; its release wakes nobody.
	r2, ok := s.Acquire(ep, key("d2"))
	if !ok {
		t.Fatal("d2 found no slot")
	}
	r2()
	if len(woken) != 1 {
		t.Errorf("woken = %v, want [d2] once", woken)
	}
}

func TestInFlightCancelsOnlyTheEndpointsAttempts(t *testing.T) {
	f := NewInFlight()
	cancelled := map[string]bool{}
	cancel := func(name string) func() { return func() { cancelled[name] = true } }
	untrackA1 := f.Track(key("whep-a"), "d1", cancel("d1"))
	f.Track(key("whep-a"), "d2", cancel("d2"))
	f.Track(key("whep-b"), "d3", cancel("d3"))
	untrackA1()
	if got := f.Len(key("whep-a")); got != 1 {
		t.Errorf("in flight to whep-a = %d, want 1", got)
	}
	f.Cancel(key("whep-a"))
	if cancelled["d1"] || !cancelled["d2"] || cancelled["d3"] {
		t.Errorf("cancelled = %v, want d2 only", cancelled)
	}
}

func TestRemovedKeepsTwoGenerations(t *testing.T) {
	r := NewRemoved(2)
	for _, uid := range []types.UID{"a", "b", "c", "d"} {
		r.Add(uid)
	}
	// a and b were the first generation, c and d the second: all still known.
	for _, uid := range []types.UID{"a", "b", "c", "d"} {
		if !r.Has(uid) {
			t.Errorf("%s forgotten too early", uid)
		}
	}
	r.Add("e") // a third generation starts: the first (a, b) is dropped
	if r.Has("a") || r.Has("b") {
		t.Error("the oldest generation is still kept")
	}
	if !r.Has("c") || !r.Has("d") || !r.Has("e") || r.Has("z") {
		t.Error("wrong membership after the turn")
	}
}

// parkedAt is how many deliveries wait for a slot of the endpoint.
func parkedAt(s *Slots, endpoint types.NamespacedName) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.parked[endpoint]; q != nil {
		return len(q.in)
	}
	return 0
}
