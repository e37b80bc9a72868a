package delivery

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func endpointNamed(name string) *switchboardv1alpha1.WebhookEndpoint {
	return &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "acct"}}
}

func TestAdmitBoundsWaitingPerEndpointAndInAll(t *testing.T) {
	f := &FirstAttempts{MaxWaiting: 2, Total: 3}
	a, b := endpointNamed("whep-a"), endpointNamed("whep-b")
	doneA1, ok1 := f.Admit(a)
	_, ok2 := f.Admit(a)
	if !ok1 || !ok2 {
		t.Fatal("the first two attempts to an endpoint were not admitted")
	}
	if _, ok := f.Admit(a); ok {
		t.Fatal("a third attempt to one endpoint was admitted past MaxWaiting")
	}
	if _, ok := f.Admit(b); !ok {
		t.Fatal("another endpoint was refused while room was left")
	}
	if _, ok := f.Admit(b); ok {
		t.Fatal("admitted past Total")
	}
	if got := f.Free(); got != 0 {
		t.Errorf("Free = %d, want 0", got)
	}
	doneA1()
	doneA1() // twice gives back one place only
	if got := f.Free(); got != 1 {
		t.Errorf("Free = %d after one finished, want 1", got)
	}
	if _, ok := f.Admit(a); !ok {
		t.Error("the freed place was not given again")
	}
}

func TestEndpointFailing(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	since := func(d time.Duration) switchboardv1alpha1.WebhookEndpointStatus {
		return switchboardv1alpha1.WebhookEndpointStatus{FailingSince: &metav1.Time{Time: t0.Add(-d)}}
	}
	healthy := switchboardv1alpha1.WebhookEndpointStatus{}
	for _, tc := range []struct {
		name   string
		status switchboardv1alpha1.WebhookEndpointStatus
		streak int
		// ago is how long since the streak's last failure; others the first attempts under way.
		ago    time.Duration
		others int
		want   bool
	}{
		{"healthy", healthy, 0, 0, 0, false},
		{"status failing for a moment (mixed answers)", since(time.Second), 0, 0, 0, false},
		{"status failing for the grace (down)", since(10 * time.Second), 0, 0, 0, true},
		{"seven first attempts failed in a row", healthy, 7, 0, 0, false},
		{"eight in a row (went down, or hangs)", healthy, 8, 0, 0, true},
		{"eight in a row, within the cooldown", healthy, 8, 999 * time.Millisecond, 0, true},
		{"past the cooldown: one probe", healthy, 8, time.Second, 0, false},
		{"past the cooldown, a probe under way", healthy, 9, time.Second, 1, true},
		{"the status decides whatever the cooldown", since(time.Minute), 8, time.Minute, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streak := failureStreak{count: tc.streak, last: t0, noted: t0.Add(-tc.ago)}
			if got := endpointFailing(tc.status, streak, t0, failingGrace, 8, t0, time.Second, tc.others); got != tc.want {
				t.Errorf("endpointFailing = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdmitSendsAFailingEndpointToTheController(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	f := &FirstAttempts{Clock: clk, Pacing: clk, MaxFailures: 2, Cooldown: time.Second}
	ep := endpointNamed("whep-a")
	ep.Status.FailingSince = &metav1.Time{Time: t0.Add(-time.Minute)}
	if _, ok := f.Admit(ep); ok {
		t.Error("an endpoint whose status has said failing for a minute was admitted")
	}
	ep.Status.FailingSince = &metav1.Time{Time: t0}
	admit := func(want bool, why string) {
		t.Helper()
		done, ok := f.Admit(ep)
		if ok != want {
			t.Errorf("admitted = %v, want %v: %s", ok, want, why)
		}
		if ok {
			done()
		}
	}
	admit(true, "status failing for a moment only (one failure among successes)")
	ep.Status.FailingSince = nil
	// First attempts fail in a row; the status does not show it yet.
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Second))
	admit(true, "one failure")
	f.noteOutcome(keyOf(ep), false, t0.Add(2*time.Second))
	admit(false, "MaxFailures in a row")
	// The status shows a later attempt, but failing: still refused.
	ep.Status.FailingSince = &metav1.Time{Time: t0.Add(time.Second)}
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0.Add(3 * time.Second)}
	admit(false, "status failing after the streak")
	// The status shows an older success: still refused.
	ep.Status.FailingSince = nil
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0}
	admit(false, "a success older than the streak")
	// Past the cooldown one first attempt probes the endpoint; a second waits for its answer.
	clk.SetTime(t0.Add(time.Second))
	probe, ok := f.Admit(ep)
	if !ok {
		t.Fatal("no probe past the cooldown")
	}
	admit(false, "a probe is under way")
	f.noteOutcome(keyOf(ep), false, clk.Now())
	probe()
	admit(false, "the probe failed: a new cooldown")
	// The controller's retry succeeded and the status shows it.
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0.Add(time.Minute)}
	admit(true, "the status showed a later success")
	ep.Status.LastDeliveryAt = nil
	admit(true, "the streak was forgotten once cleared")
	// A first attempt that succeeds ends a streak too.
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Hour))
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Hour+time.Second))
	admit(false, "MaxFailures in a row again")
	f.noteOutcome(keyOf(ep), true, t0.Add(time.Hour+2*time.Second))
	admit(true, "a first attempt succeeded")
}

func keyOf(ep *switchboardv1alpha1.WebhookEndpoint) types.NamespacedName {
	return types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}
}

func TestClaimRoom(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	stall := 500 * time.Millisecond
	a, b := types.NamespacedName{Namespace: "acct", Name: "whep-a"}, types.NamespacedName{Namespace: "acct", Name: "whep-b"}
	for _, tc := range []struct {
		name string
		load map[types.NamespacedName]*endpointLoad
		want int
	}{
		{"idle: all of MaxWaiting", nil, 256},
		{"one busy endpoint keeping up", map[types.NamespacedName]*endpointLoad{a: {admitted: 200, progress: t0.Add(-100 * time.Millisecond)}}, 56},
		{"full and keeping up: nothing", map[types.NamespacedName]*endpointLoad{a: {admitted: 256, progress: t0}}, 0},
		{"the busiest endpoint that keeps up sets it", map[types.NamespacedName]*endpointLoad{
			a: {admitted: 10, progress: t0}, b: {admitted: 250, progress: t0.Add(-stall + time.Millisecond)}}, 6},
		{"a stalled endpoint paces nothing", map[types.NamespacedName]*endpointLoad{
			a: {admitted: 10, progress: t0}, b: {admitted: 256, progress: t0.Add(-stall)}}, 246},
		{"only stalled endpoints", map[types.NamespacedName]*endpointLoad{b: {admitted: 256, progress: t0.Add(-time.Minute)}}, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := claimRoom(tc.load, t0, stall, 256); got != tc.want {
				t.Errorf("claimRoom = %d, want %d", got, tc.want)
			}
		})
	}
}

// Room and Stalled follow the same rule: an endpoint with attempts admitted and none
// succeeding for Stall paces no claims, and the dispatcher's back-pressure leaves its backlog out.
func TestRoomFollowsAdmittedAttemptsAndProgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	f := &FirstAttempts{MaxWaiting: 3, Pacing: clk, Clock: clk, Stall: time.Second}
	ep := endpointNamed("whep-a")
	var dones []func()
	for range 3 {
		done, ok := f.Admit(ep)
		if !ok {
			t.Fatal("refused below MaxWaiting")
		}
		dones = append(dones, done)
	}
	if got := f.Room(); got != 0 {
		t.Errorf("Room = %d with the endpoint full and just admitted, want 0", got)
	}
	if f.Stalled(keyOf(ep)) {
		t.Error("Stalled just after admission")
	}
	// Nothing finished for the stall time: the endpoint no longer paces the claims.
	clk.SetTime(clk.Now().Add(time.Second))
	if got := f.Room(); got != 3 {
		t.Errorf("Room = %d with the endpoint stalled, want 3", got)
	}
	if !f.Stalled(keyOf(ep)) {
		t.Error("not Stalled with nothing finished for the stall time")
	}
	// One fails: no progress.
	f.noteOutcome(keyOf(ep), false, clk.Now())
	dones[0]()
	if got := f.Room(); got != 3 {
		t.Errorf("Room = %d after an attempt failed, want 3", got)
	}
	// One succeeds: it keeps up again, with one place free.
	f.noteOutcome(keyOf(ep), true, clk.Now())
	if got := f.Room(); got != 1 {
		t.Errorf("Room = %d after an attempt succeeded, want 1", got)
	}
	if f.Stalled(keyOf(ep)) {
		t.Error("Stalled right after a success")
	}
	dones[1]()
	if got := f.Room(); got != 2 {
		t.Errorf("Room = %d after it finished, want 2", got)
	}
	dones[2]()
	if got := f.Room(); got != 3 {
		t.Errorf("Room = %d when idle, want 3", got)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	if f.Stalled(keyOf(ep)) {
		t.Error("an idle endpoint (nothing admitted) counts as Stalled")
	}
}
