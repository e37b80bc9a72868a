package engine

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

// admit is Admit for a delivery of an event claimed for the first time; ok is whether it
// became a first attempt.
func admit(f *FirstAttempts, ep *switchboardv1alpha1.WebhookEndpoint) (done func(), ok bool) {
	done, route, _ := f.Admit(ep, false, false)
	return done, route == RouteFirstAttempt
}

func TestAdmitBoundsWaitingPerEndpointAndInAll(t *testing.T) {
	f := &FirstAttempts{MaxWaiting: 2, Total: 3}
	a, b := endpointNamed("whep-a"), endpointNamed("whep-b")
	doneA1, ok1 := admit(f, a)
	_, ok2 := admit(f, a)
	if !ok1 || !ok2 {
		t.Fatal("the first two attempts to an endpoint were not admitted")
	}
	if _, route, rule := f.Admit(a, false, false); route != RouteController || rule != EndpointQueueFull.Name {
		t.Fatalf("a third attempt to one endpoint: %s by %s, want the controller by %s", route, rule, EndpointQueueFull.Name)
	}
	if _, ok := admit(f, b); !ok {
		t.Fatal("another endpoint was refused while room was left")
	}
	if _, route, rule := f.Admit(b, false, false); route != RouteController || rule != EngineFull.Name {
		t.Fatalf("past Total: %s by %s, want the controller by %s", route, rule, EngineFull.Name)
	}
	if got := f.Free(); got != 0 {
		t.Errorf("Free = %d, want 0", got)
	}
	doneA1()
	doneA1() // twice gives back one place only
	if got := f.Free(); got != 1 {
		t.Errorf("Free = %d after one finished, want 1", got)
	}
	if _, ok := admit(f, a); !ok {
		t.Error("the freed place was not given again")
	}
}

func TestAdmitSendsAFailingEndpointToTheController(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	f := &FirstAttempts{Clock: clk, Pacing: clk, MaxFailures: 2, Cooldown: time.Second}
	ep := endpointNamed("whep-a")
	ep.Status.FailingSince = &metav1.Time{Time: t0.Add(-time.Minute)}
	if _, ok := admit(f, ep); ok {
		t.Error("an endpoint whose status has said failing for a minute was admitted")
	}
	ep.Status.FailingSince = &metav1.Time{Time: t0}
	expect := func(want bool, why string) {
		t.Helper()
		done, ok := admit(f, ep)
		if ok != want {
			t.Errorf("admitted = %v, want %v: %s", ok, want, why)
		}
		if ok {
			done()
		}
	}
	expect(true, "status failing for a moment only (one failure among successes)")
	ep.Status.FailingSince = nil
	// First attempts fail in a row; the status does not show it yet.
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Second))
	expect(true, "one failure")
	f.noteOutcome(keyOf(ep), false, t0.Add(2*time.Second))
	expect(false, "MaxFailures in a row")
	// The status shows a later attempt, but failing: still refused.
	ep.Status.FailingSince = &metav1.Time{Time: t0.Add(time.Second)}
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0.Add(3 * time.Second)}
	expect(false, "status failing after the streak")
	// The status shows an older success: still refused.
	ep.Status.FailingSince = nil
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0}
	expect(false, "a success older than the streak")
	// Past the cooldown one first attempt probes the endpoint; a second waits for its answer.
	clk.SetTime(t0.Add(time.Second))
	probe, ok := admit(f, ep)
	if !ok {
		t.Fatal("no probe past the cooldown")
	}
	expect(false, "a probe is under way")
	f.noteOutcome(keyOf(ep), false, clk.Now())
	probe()
	expect(false, "the probe failed: a new cooldown")
	// The controller's retry succeeded and the status shows it.
	ep.Status.LastDeliveryAt = &metav1.Time{Time: t0.Add(time.Minute)}
	expect(true, "the status showed a later success")
	ep.Status.LastDeliveryAt = nil
	expect(true, "the streak was forgotten once cleared")
	// A first attempt that succeeds ends a streak too.
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Hour))
	f.noteOutcome(keyOf(ep), false, t0.Add(time.Hour+time.Second))
	expect(false, "MaxFailures in a row again")
	f.noteOutcome(keyOf(ep), true, t0.Add(time.Hour+2*time.Second))
	expect(true, "a first attempt succeeded")
}

// paced is an endpoint with admitted first attempts whose last 16 successes came interval
// apart, the newest at last.
func paced(admitted int, last time.Time, interval time.Duration) *endpointLoad {
	l := &endpointLoad{admitted: admitted}
	for i := paceSamples - 1; i >= 0; i-- {
		l.noteSuccess(last.Add(-time.Duration(i) * interval))
	}
	return l
}

func TestDrainTime(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	l := &endpointLoad{admitted: 100}
	if _, ok := l.drainTime(); ok {
		t.Error("a pace from no success")
	}
	l.noteSuccess(t0)
	if _, ok := l.drainTime(); ok {
		t.Error("a pace from one success")
	}
	l.noteSuccess(t0.Add(10 * time.Millisecond))
	if d, ok := l.drainTime(); !ok || d != time.Second {
		t.Errorf("two successes 10 ms apart, 100 queued: %s %v, want 1s", d, ok)
	}
	// More than the samples: only the latest count.
	for i := range 40 {
		l.noteSuccess(t0.Add(time.Second + time.Duration(i)*time.Millisecond))
	}
	if d, _ := l.drainTime(); d != 100*time.Millisecond {
		t.Errorf("after a faster run: %s, want 100ms", d)
	}
}

func keyOf(ep *switchboardv1alpha1.WebhookEndpoint) types.NamespacedName {
	return types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}
}

// An endpoint with attempts admitted and none succeeding for Stall is Stalled: the
// dispatcher's back-pressure leaves its backlog out.
func TestStalledFollowsAdmittedAttemptsAndProgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	f := &FirstAttempts{MaxWaiting: 3, Pacing: clk, Clock: clk, Stall: time.Second}
	ep := endpointNamed("whep-a")
	var dones []func()
	for range 3 {
		done, ok := admit(f, ep)
		if !ok {
			t.Fatal("refused below MaxWaiting")
		}
		dones = append(dones, done)
	}
	if f.Stalled(keyOf(ep)) {
		t.Error("Stalled just after admission")
	}
	// Nothing finished for the stall time: the endpoint no longer paces the claims.
	clk.SetTime(clk.Now().Add(time.Second))
	if !f.Stalled(keyOf(ep)) {
		t.Error("not Stalled with nothing finished for the stall time")
	}
	if got := f.Hanging(); got[ep.Namespace] != 3 || len(got) != 1 {
		t.Errorf("Hanging = %v with nothing finished for the stall time, want 3 in %s", got, ep.Namespace)
	}
	// One fails: no progress.
	f.noteOutcome(keyOf(ep), false, clk.Now())
	dones[0]()
	// One succeeds: it keeps up again, with one place free.
	f.noteOutcome(keyOf(ep), true, clk.Now())
	if f.Stalled(keyOf(ep)) {
		t.Error("Stalled right after a success")
	}
	if got := f.Hanging(); len(got) != 0 {
		t.Errorf("Hanging = %v right after a success, want none", got)
	}
	dones[1]()
	dones[2]()
	clk.SetTime(clk.Now().Add(time.Minute))
	if f.Stalled(keyOf(ep)) {
		t.Error("an idle endpoint (nothing admitted) counts as Stalled")
	}
}

func TestEndpointLagging(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	stall := 500 * time.Millisecond
	for _, tc := range []struct {
		name string
		load *endpointLoad
		want bool
	}{
		{"nothing admitted", &endpointLoad{progress: t0.Add(-time.Minute)}, false},
		{"busy and keeping up", &endpointLoad{admitted: 200, progress: t0.Add(-100 * time.Millisecond)}, false},
		{"no progress for the stall time", &endpointLoad{admitted: 10, progress: t0.Add(-stall)}, true},
		{"fast: 256 queued, 1 ms apart (256 ms of work)", paced(256, t0, time.Millisecond), false},
		{"slow: 256 queued, 50 ms apart (12.8 s of work)", paced(256, t0, 50*time.Millisecond), true},
		{"slow with little queued (800 ms of work)", paced(16, t0, 50*time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpointLagging(*tc.load, t0, stall, time.Second); got != tc.want {
				t.Errorf("endpointLagging = %v, want %v", got, tc.want)
			}
		})
	}
}

// A failing endpoint whose deliveries are deferred is probed once, then not again until the
// probe is over and ProbeInterval has passed; a probe that succeeds ends the probing.
func TestAdmitProbesAFailingEndpointWhileDeliveriesAreDeferred(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	f := &FirstAttempts{Clock: clk, Pacing: clk}
	ep := endpointNamed("whep-a")
	ep.Status.FailingSince = &metav1.Time{Time: t0.Add(-time.Hour)}
	route := func(noRoom bool) (func(), string) {
		done, _, rule := f.Admit(ep, false, noRoom)
		return done, rule
	}
	if _, rule := route(false); rule != EndpointFailing.Name {
		t.Fatalf("with room: %s, want %s", rule, EndpointFailing.Name)
	}
	probe, rule := route(true)
	if rule != ProbeWhileDeferred.Name {
		t.Fatalf("no room: %s, want %s", rule, ProbeWhileDeferred.Name)
	}
	if _, rule := route(true); rule != EndpointFailing.Name {
		t.Errorf("a second while the probe is under way: %s, want %s", rule, EndpointFailing.Name)
	}
	f.noteOutcome(keyOf(ep), false, clk.Now())
	probe()
	clk.SetTime(t0.Add(DefaultProbeInterval - time.Second))
	if _, rule := route(true); rule != EndpointFailing.Name {
		t.Errorf("within the interval after a failed probe: %s, want %s", rule, EndpointFailing.Name)
	}
	clk.SetTime(t0.Add(DefaultProbeInterval))
	probe, rule = route(true)
	if rule != ProbeWhileDeferred.Name {
		t.Fatalf("after the interval: %s, want %s", rule, ProbeWhileDeferred.Name)
	}
	// The endpoint answers again: the probe succeeds and the status clears.
	f.noteOutcome(keyOf(ep), true, clk.Now())
	probe()
	ep.Status.FailingSince = nil
	if _, rule := route(true); rule != RuleAdmitted {
		t.Errorf("after a probe succeeded: %s, want %s", rule, RuleAdmitted)
	}
	if len(f.probed) != 0 {
		t.Errorf("probe times kept after the endpoint recovered: %v", f.probed)
	}
}
