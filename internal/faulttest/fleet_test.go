package faulttest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// perEndpoint is serve's default --webhook-per-endpoint: the fleet-wide bound.
const perEndpoint = 8

// startClaiming starts a replica and waits until it claims outbox events (a replica that
// joins a running fleet first waits for the others to make room: fleet.Decide).
func (e *env) startClaiming(t *testing.T, name, leaseID string) *replica {
	t.Helper()
	r := e.startReplica(t, name, leaseID)
	waitFor(t, name+" to claim outbox events", time.Minute, func() bool { return r.logContains("claiming outbox events") })
	return r
}

// reportLoad reports calls to the replicas in turn, one every gap, until stop is closed,
// and returns each call with when its report was answered.
func (e *env) reportLoad(t *testing.T, rs []*replica, in *inbox, prefix string, gap time.Duration, stop <-chan struct{}) (wait func() map[string]time.Time) {
	var (
		mu    sync.Mutex
		calls = map[string]time.Time{}
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(gap)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
			id, err := e.tryReport(rs[i%len(rs)], in, uniqueRef(prefix, i))
			if err != nil {
				t.Error(err)
				continue
			}
			mu.Lock()
			calls[id] = time.Now()
			mu.Unlock()
		}
	}()
	return func() map[string]time.Time {
		wg.Wait()
		return calls
	}
}

func keys(m map[string]time.Time) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Two replicas with the default flags both make first attempts, and the receiver never sees
// more than --webhook-per-endpoint requests at once to the endpoint; one of them is killed
// (SIGKILL) under load: nothing is lost, and the bound still holds.
func TestFleetBothDeliverAndHoldTheBound(t *testing.T) {
	e := setup(t)
	const lease = "fault-fleet"
	a := e.startClaiming(t, "fleet-a", lease)
	b := e.startClaiming(t, "fleet-b", lease)
	in := e.createEndpoint(t, b, "fleet")
	in.setDelay(100 * time.Millisecond) // the endpoint is the bottleneck: the bound is reached

	stop := make(chan struct{})
	wait := e.reportLoad(t, []*replica{a, b}, in, "fleet", 10*time.Millisecond, stop)
	time.Sleep(10 * time.Second)
	close(stop)
	calls := wait()
	tl := in.waitAll(t, keys(calls), 2*time.Minute)
	if tl.repeats != 0 || len(tl.callsWithTwoEvents) != 0 || tl.badSignatures != 0 {
		t.Errorf("two replicas: %d repeats, calls with two events %v, bad signatures %d", tl.repeats, tl.callsWithTwoEvents, tl.badSignatures)
	}
	bySender := map[int]int{}
	for _, d := range in.deliveries() {
		bySender[d.from]++
	}
	for pid := range bySender {
		if pid != a.cmd.Process.Pid && pid != b.cmd.Process.Pid && pid != 0 {
			t.Errorf("deliveries from process %d, neither replica", pid)
		}
	}
	if bySender[a.cmd.Process.Pid] == 0 || bySender[b.cmd.Process.Pid] == 0 {
		t.Errorf("deliveries by sending process %v: want both replicas (%d, %d) to have sent some", bySender, a.cmd.Process.Pid, b.cmd.Process.Pid)
	}
	both := in.concurrency(true)
	if both > perEndpoint {
		t.Errorf("the receiver saw %d requests at once to one endpoint from two replicas; the bound is %d", both, perEndpoint)
	}
	delivered := len(in.deliveries())

	// Kill one under load.
	stop = make(chan struct{})
	wait = e.reportLoad(t, []*replica{b}, in, "fleet-kill", 10*time.Millisecond, stop)
	waitFor(t, "deliveries after the second load began", time.Minute, func() bool { return len(in.deliveries()) >= delivered+20 })
	a.kill()
	killedAt := time.Now()
	time.Sleep(5 * time.Second)
	close(stop)
	after := wait()
	tl = in.waitAll(t, keys(after), 3*time.Minute)
	if len(tl.callsWithTwoEvents) != 0 || tl.badSignatures != 0 {
		t.Errorf("after the kill: calls with two events %v, bad signatures %d", tl.callsWithTwoEvents, tl.badSignatures)
	}
	afterKill := in.concurrency(false)
	if afterKill > perEndpoint {
		t.Errorf("the receiver saw %d requests at once around the kill; the bound is %d", afterKill, perEndpoint)
	}
	t.Logf("FIGURES fleet: first load %d calls, deliveries by process %v, most at once %d (bound %d); kill: %d calls lost=0 repeats(same event id)=%d most at once %d, all delivered %s after the kill",
		len(calls), bySender, both, perEndpoint, len(after), tl.repeats, afterKill, time.Since(killedAt).Round(100*time.Millisecond))
}

// kube-apiserver frozen (SIGSTOP) for 20 s under load on two replicas: first attempts to
// the endpoint that existed before go on during the freeze (p99 report→delivery under 1 s),
// nothing is lost or sent twice, and everything is delivered within 5 s of its return.
func TestFleetDeliversWhileKubeAPIServerIsFrozen(t *testing.T) {
	e := setup(t)
	const lease = "fault-fleet-frozen"
	a := e.startClaiming(t, "frozen-a", lease)
	b := e.startClaiming(t, "frozen-b", lease)
	in := e.createEndpoint(t, a, "fleet-frozen")
	warm := []string{e.report(t, a, in, uniqueRef("frozen-warm", 0))}
	in.waitAll(t, warm, time.Minute)

	stop := make(chan struct{})
	wait := e.reportLoad(t, []*replica{a, b}, in, "frozen", 50*time.Millisecond, stop)
	time.Sleep(2 * time.Second)
	resume, err := e.cp.FreezeAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	frozenAt := time.Now()
	time.Sleep(20 * time.Second)
	resume()
	resumedAt := time.Now()
	time.Sleep(2 * time.Second)
	close(stop)
	calls := wait()
	tl := in.waitAll(t, keys(calls), 2*time.Minute)
	if tl.repeats != 0 || len(tl.callsWithTwoEvents) != 0 || tl.badSignatures != 0 {
		t.Errorf("%d repeats, calls with two events %v, bad signatures %d", tl.repeats, tl.callsWithTwoEvents, tl.badSignatures)
	}
	first := map[string]time.Time{}
	for _, d := range in.deliveries() {
		if at, ok := first[d.callID]; !ok || d.at.Before(at) {
			first[d.callID] = d.at
		}
	}
	var during []time.Duration
	var last time.Time
	for id, reported := range calls {
		at := first[id]
		if reported.After(frozenAt) && reported.Before(resumedAt) {
			during = append(during, at.Sub(reported))
		}
		if reported.Before(resumedAt) && at.After(last) {
			last = at
		}
	}
	slices.Sort(during)
	if len(during) < 100 {
		t.Fatalf("only %d calls reported during the freeze", len(during))
	}
	p50, p99 := during[len(during)/2], during[len(during)*99/100]
	if p99 >= time.Second {
		t.Errorf("report→delivery during the freeze: p50 %s p99 %s, want p99 under 1 s", p50, p99)
	}
	if done := last.Sub(resumedAt); done > 5*time.Second {
		t.Errorf("the last call reported before kube-apiserver resumed was delivered %s after it resumed, want within 5 s", done)
	}
	if !a.running() || !b.running() {
		t.Fatal("a replica exited during the freeze")
	}
	ctx := context.Background()
	t.Logf("FIGURES fleet-frozen: frozen %s, %d calls in all, %d during the freeze: report→delivery p50 %s p99 %s, lost=0 repeats=%d; last call reported before the return delivered %s after it; Lease holder now %q",
		resumedAt.Sub(frozenAt).Round(100*time.Millisecond), len(calls), len(during), p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		tl.repeats, last.Sub(resumedAt).Round(10*time.Millisecond), e.leaseHolder(ctx, lease))
}

// An endpoint with a rate limit, two replicas delivering to it: the receiver never gets more
// than the limit across both (plus the one turn each replica's bucket may hold), every call
// is delivered, and both replicas send.
func TestFleetHoldsAnEndpointsRateLimit(t *testing.T) {
	e := setup(t)
	const lease, limit = "fault-fleet-rate", 10
	a := e.startClaiming(t, "rate-a", lease)
	b := e.startClaiming(t, "rate-b", lease)
	in := e.createEndpoint(t, a, "fleet-rate")
	if status, _, body := e.do("PATCH", "http://"+a.api+"/v1/webhooks/"+in.endpoint, in.key, map[string]any{"rate_limit": limit}); status != 200 {
		t.Fatalf("set the rate limit: %d %s", status, body)
	}
	stop := make(chan struct{})
	wait := e.reportLoad(t, []*replica{a, b}, in, "rate", 50*time.Millisecond, stop)
	time.Sleep(4 * time.Second)
	close(stop)
	calls := wait()
	tl := in.waitAll(t, keys(calls), 2*time.Minute)
	if tl.repeats != 0 || tl.badSignatures != 0 {
		t.Errorf("%d repeats, %d bad signatures", tl.repeats, tl.badSignatures)
	}
	ds := in.deliveries()
	slices.SortFunc(ds, func(x, y delivery) int { return x.at.Compare(y.at) })
	most, bySender := 0, map[int]int{}
	for i, d := range ds {
		bySender[d.from]++
		n := 0
		for _, later := range ds[i:] {
			if later.at.Sub(d.at) < time.Second {
				n++
			}
		}
		most = max(most, n)
	}
	if most > limit+2 {
		t.Errorf("the receiver got %d deliveries within one second; the limit is %d a second (+1 a replica)", most, limit)
	}
	if span, want := ds[len(ds)-1].at.Sub(ds[0].at), time.Duration(len(ds)-3)*time.Second/limit; span < want {
		t.Errorf("%d deliveries in %s: faster than %d a second", len(ds), span, limit)
	}
	if bySender[a.cmd.Process.Pid] == 0 || bySender[b.cmd.Process.Pid] == 0 {
		t.Errorf("deliveries by sending process %v: want both replicas to send", bySender)
	}
	t.Logf("FIGURES fleet-rate: %d calls, limit %d/s, most in one second %d, by process %v", len(calls), limit, most, bySender)
}
