package faults

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// perEndpoint is serve's default --webhook-per-endpoint: the fleet-wide bound.
const perEndpoint = 8

// startClaiming starts a replica and waits until it claims outbox events (a replica that
// joins a running fleet first waits for the others to make room: fleet.Decide).
func (e *env) startClaiming(t *testing.T, name, leaseID string) *servetest.Replica {
	t.Helper()
	r := e.startReplica(t, name, leaseID)
	servetest.WaitFor(t, name+" to claim outbox events", time.Minute, func() bool { return r.LogContains("claiming outbox events") })
	return r
}

// reportLoad reports calls to the replicas in turn, one every gap, until stop is closed,
// and returns each call with when its report was answered.
func (e *env) reportLoad(t *testing.T, rs []*servetest.Replica, in *inbox, prefix string, gap time.Duration, stop <-chan struct{}) (wait func() map[string]time.Time) {
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
			id, err := tryReport(rs[i%len(rs)], in, servetest.UniqueRef(prefix, i))
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
	in.SetDelay(100 * time.Millisecond) // the endpoint is the bottleneck: the bound is reached

	stop := make(chan struct{})
	wait := e.reportLoad(t, []*servetest.Replica{a, b}, in, "fleet", 10*time.Millisecond, stop)
	time.Sleep(10 * time.Second)
	close(stop)
	calls := wait()
	tl := in.WaitAll(t, keys(calls), 2*time.Minute)
	if tl.Repeats != 0 || len(tl.CallsWithTwoEvents) != 0 || tl.BadSignatures != 0 {
		t.Errorf("two replicas: %d repeats, calls with two events %v, bad signatures %d", tl.Repeats, tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	bySender := tl.Senders
	for name := range bySender {
		if name != a.Name && name != b.Name && name != "" {
			t.Errorf("deliveries from %q, neither replica", name)
		}
	}
	if bySender[a.Name] == 0 || bySender[b.Name] == 0 {
		t.Errorf("deliveries by sending replica %v: want both replicas (%s, %s) to have sent some", bySender, a.Name, b.Name)
	}
	both := in.MaxInFlight(true)
	if both > perEndpoint {
		t.Errorf("the receiver saw %d requests at once to one endpoint from two replicas; the bound is %d", both, perEndpoint)
	}
	delivered := len(in.Deliveries())

	// Kill one under load.
	stop = make(chan struct{})
	wait = e.reportLoad(t, []*servetest.Replica{b}, in, "fleet-kill", 10*time.Millisecond, stop)
	servetest.WaitFor(t, "deliveries after the second load began", time.Minute, func() bool { return len(in.Deliveries()) >= delivered+20 })
	a.Kill()
	killedAt := time.Now()
	time.Sleep(5 * time.Second)
	close(stop)
	after := wait()
	tl = in.WaitAll(t, keys(after), 3*time.Minute)
	if len(tl.CallsWithTwoEvents) != 0 || tl.BadSignatures != 0 {
		t.Errorf("after the kill: calls with two events %v, bad signatures %d", tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	afterKill := in.MaxInFlight(false)
	if afterKill > perEndpoint {
		t.Errorf("the receiver saw %d requests at once around the kill; the bound is %d", afterKill, perEndpoint)
	}
	t.Logf("FIGURES fleet: first load %d calls, deliveries by replica %v, most at once %d (bound %d); kill: %d calls lost=0 repeats(same event id)=%d most at once %d, all delivered %s after the kill",
		len(calls), bySender, both, perEndpoint, len(after), tl.Repeats, afterKill, time.Since(killedAt).Round(100*time.Millisecond))
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
	warm := []string{report(t, a, in, servetest.UniqueRef("frozen-warm", 0))}
	in.WaitAll(t, warm, time.Minute)

	stop := make(chan struct{})
	wait := e.reportLoad(t, []*servetest.Replica{a, b}, in, "frozen", 50*time.Millisecond, stop)
	time.Sleep(2 * time.Second)
	resume, err := e.CP.FreezeAPIServer()
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
	tl := in.WaitAll(t, keys(calls), 2*time.Minute)
	if tl.Repeats != 0 || len(tl.CallsWithTwoEvents) != 0 || tl.BadSignatures != 0 {
		t.Errorf("%d repeats, calls with two events %v, bad signatures %d", tl.Repeats, tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	first := map[string]time.Time{}
	for _, d := range in.Deliveries() {
		if at, ok := first[d.CallID]; !ok || d.At.Before(at) {
			first[d.CallID] = d.At
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
	if !a.Running() || !b.Running() {
		t.Fatal("a replica exited during the freeze")
	}
	ctx := context.Background()
	t.Logf("FIGURES fleet-frozen: frozen %s, %d calls in all, %d during the freeze: report→delivery p50 %s p99 %s, lost=0 repeats=%d; last call reported before the return delivered %s after it; Lease holder now %q",
		resumedAt.Sub(frozenAt).Round(100*time.Millisecond), len(calls), len(during), p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		tl.Repeats, last.Sub(resumedAt).Round(10*time.Millisecond), e.leaseHolder(ctx, lease))
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
	if status, _, body := servetest.Do("PATCH", "http://"+a.API+"/v1/webhooks/"+in.endpoint, in.key, map[string]any{"rate_limit": limit}); status != 200 {
		t.Fatalf("set the rate limit: %d %s", status, body)
	}
	stop := make(chan struct{})
	wait := e.reportLoad(t, []*servetest.Replica{a, b}, in, "rate", 50*time.Millisecond, stop)
	time.Sleep(4 * time.Second)
	close(stop)
	calls := wait()
	tl := in.WaitAll(t, keys(calls), 2*time.Minute)
	if tl.Repeats != 0 || tl.BadSignatures != 0 {
		t.Errorf("%d repeats, %d bad signatures", tl.Repeats, tl.BadSignatures)
	}
	ds := in.Deliveries()
	slices.SortFunc(ds, func(x, y servetest.Delivery) int { return x.At.Compare(y.At) })
	most, bySender := 0, map[string]int{}
	for i, d := range ds {
		bySender[d.Sender]++
		n := 0
		for _, later := range ds[i:] {
			if later.At.Sub(d.At) < time.Second {
				n++
			}
		}
		most = max(most, n)
	}
	if most > limit+2 {
		t.Errorf("the receiver got %d deliveries within one second; the limit is %d a second (+1 a replica)", most, limit)
	}
	if span, want := ds[len(ds)-1].At.Sub(ds[0].At), time.Duration(len(ds)-3)*time.Second/limit; span < want {
		t.Errorf("%d deliveries in %s: faster than %d a second", len(ds), span, limit)
	}
	if bySender[a.Name] == 0 || bySender[b.Name] == 0 {
		t.Errorf("deliveries by sending replica %v: want both replicas to send", bySender)
	}
	t.Logf("FIGURES fleet-rate: %d calls, limit %d/s, most in one second %d, by replica %v", len(calls), limit, most, bySender)
}
