package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// (a) The only replica is killed (SIGKILL) while deliveries are in flight, then started
// again: every reported call is delivered, and a repeat only ever carries the same event id.
func TestKillMidDeliveryAndRestart(t *testing.T) {
	e := setup(t)
	const lease = "fault-kill-restart"
	first := e.startReplica(t, "replica-1", lease)
	in := e.createEndpoint(t, first, "kill-restart")
	in.SetDelay(300 * time.Millisecond) // deliveries stay in flight

	const n = 30
	var calls []string
	for i := range n {
		calls = append(calls, report(t, first, in, servetest.UniqueRef("kill", i)))
	}
	servetest.WaitFor(t, "the first deliveries", 60*time.Second, func() bool { return len(in.Deliveries()) >= 3 })
	before := len(in.Deliveries())
	first.Kill()
	killedAt := time.Now()
	t.Logf("killed %s after %d of %d deliveries", first.Name, before, n)
	if before >= n {
		t.Fatalf("every delivery finished before the kill (%d); the scenario tests nothing", before)
	}

	second := e.startReplica(t, "replica-2", lease)
	restartedAt := time.Now()
	tl := in.WaitAll(t, calls, 2*time.Minute)
	recovered := time.Since(killedAt)
	if len(tl.CallsWithTwoEvents) > 0 || tl.BadSignatures > 0 {
		t.Errorf("calls announced by two events: %v; bad signatures: %d", tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	if !second.LogContains("Successfully acquired lease") {
		t.Error("the restarted process delivered without leading")
	}
	// The killed process's claims end one claim lease after its last renewal, while the new
	// one waits out its settle time (the dead one's heartbeat still looks live): well under
	// the minute a claim once lasted.
	if recovered > 45*time.Second {
		t.Errorf("all delivered %v after the kill: the killed process's claims should end %v after its last renewal",
			recovered.Round(time.Second), engine.DefaultEventLease)
	}
	t.Logf("FIGURES kill-restart: calls=%d delivered before the kill=%d lost=0 repeats(same event id)=%d restarted process serving %s after the kill, all delivered %s after the kill (lease %s, not released by kill -9)",
		n, before, tl.Repeats, restartedAt.Sub(killedAt).Round(10*time.Millisecond), recovered.Round(10*time.Millisecond), leaseDuration)
}

// (b) Two electing replicas; the leader is killed (SIGKILL, so the Lease is not released):
// the other takes over within about the lease duration and nothing reported is lost.
func TestKillLeaderOfTwo(t *testing.T) {
	e := setup(t)
	const lease = "fault-kill-leader"
	leader := e.startReplica(t, "leader", lease)
	servetest.WaitFor(t, "the first replica to lead", 60*time.Second, func() bool { return leader.LogContains("Successfully acquired lease") })
	follower := e.startReplica(t, "follower", lease)
	in := e.createEndpoint(t, follower, "kill-leader")
	in.SetDelay(100 * time.Millisecond)
	ctx := context.Background()
	holder := e.leaseHolder(ctx, lease)

	var calls []string
	for i := range 10 {
		// Reports go to both replicas: each serves the platform API.
		calls = append(calls, report(t, []*servetest.Replica{leader, follower}[i%2], in, servetest.UniqueRef("leader", i)))
	}
	leader.Kill()
	killedAt := time.Now()
	for i := 10; i < 20; i++ {
		calls = append(calls, report(t, follower, in, servetest.UniqueRef("leader", i)))
	}
	servetest.WaitFor(t, "the follower to take the Lease", 3*leaseDuration+30*time.Second, func() bool {
		h := e.leaseHolder(ctx, lease)
		return h != "" && h != holder
	})
	takeover := time.Since(killedAt)
	// The follower logs taking the Lease after kube-apiserver answered its update, so the
	// line may reach the log a moment after the Lease shows the new holder.
	servetest.WaitFor(t, "the follower to log taking the Lease", 10*time.Second, func() bool {
		return follower.LogContains("Successfully acquired lease")
	})
	tl := in.WaitAll(t, calls, 2*time.Minute)
	recovered := time.Since(killedAt)
	if len(tl.CallsWithTwoEvents) > 0 || tl.BadSignatures > 0 {
		t.Errorf("calls announced by two events: %v; bad signatures: %d", tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	t.Logf("FIGURES kill-leader: calls=%d lost=0 repeats=%d takeover=%s all delivered %s after the kill (lease %s, renew %s, retry %s)",
		len(calls), tl.Repeats, takeover.Round(10*time.Millisecond), recovered.Round(10*time.Millisecond),
		leaseDuration, renewDeadline, retryPeriod)
}

// (c) Two replicas with the default flags (leader election on): both take reports, one
// delivers, and no event reaches the receiver twice.
func TestTwoReplicasDeliverOnce(t *testing.T) {
	e := setup(t)
	const lease = "fault-two-replicas"
	a := e.startReplica(t, "replica-a", lease)
	b := e.startReplica(t, "replica-b", lease)
	in := e.createEndpoint(t, a, "two-replicas")
	var calls []string
	for i := range 40 {
		calls = append(calls, report(t, []*servetest.Replica{a, b}[i%2], in, servetest.UniqueRef("two", i)))
	}
	in.WaitAll(t, calls, 2*time.Minute)
	time.Sleep(2 * time.Second) // a second deliverer would show up by now
	tl := in.Tally(calls)
	if tl.Repeats != 0 || len(tl.CallsWithTwoEvents) != 0 || tl.BadSignatures != 0 {
		t.Errorf("two replicas: %d repeated deliveries, calls with two events %v, bad signatures %d", tl.Repeats, tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	if a.LogContains("Successfully acquired lease") == b.LogContains("Successfully acquired lease") {
		t.Fatal("want exactly one replica to have led")
	}

	// A clean shutdown (SIGTERM, as on a rolling update) releases the Lease: the other
	// replica takes over within a retry period or two, not after the lease expires.
	leader, other := a, b
	if b.LogContains("Successfully acquired lease") {
		leader, other = b, a
	}
	ctx := context.Background()
	holder := e.leaseHolder(ctx, lease)
	stoppedAt := time.Now()
	leader.Stop()
	servetest.WaitFor(t, "the other replica to take the released Lease", 3*leaseDuration, func() bool {
		h := e.leaseHolder(ctx, lease)
		return h != "" && h != holder
	})
	handover := time.Since(stoppedAt)
	if handover >= leaseDuration {
		t.Errorf("handover after a clean shutdown took %s, as long as the lease (%s): was the Lease released?", handover, leaseDuration)
	}
	after := []string{report(t, other, in, servetest.UniqueRef("two-after", 0))}
	in.WaitAll(t, after, time.Minute)
	t.Logf("FIGURES two-replicas: calls=%d delivered=%d repeats=%d; handover after SIGTERM of the leader=%s (lease %s, retry %s)",
		len(calls), len(in.Deliveries()), tl.Repeats, handover.Round(10*time.Millisecond), leaseDuration, retryPeriod)
}

// (d) kube-apiserver frozen (SIGSTOP) for longer than the renew deadline: routes that do not
// touch Kubernetes answer as usual, webhook routes answer 503 with Retry-After within the
// kube-apiserver deadline, reports are taken, the process stays up, and once kube-apiserver
// runs again (SIGCONT) the process leads again and delivers what was reported meanwhile.
func TestKubeAPIServerPaused(t *testing.T) {
	e := setup(t)
	const lease = "fault-apiserver-paused"
	r := e.startReplica(t, "replica", lease)
	servetest.WaitFor(t, "the replica to lead", 60*time.Second, func() bool { return r.LogContains("Successfully acquired lease") })
	in := e.createEndpoint(t, r, "apiserver-paused")
	ctx := context.Background()
	holder := e.leaseHolder(ctx, lease)
	var calls []string
	calls = append(calls, report(t, r, in, servetest.UniqueRef("paused", 0)))
	in.WaitAll(t, calls, time.Minute)

	resume, err := e.CP.FreezeAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	defer resume()

	pause := renewDeadline + 4*time.Second // past the renew deadline: the leader loses the Lease
	var webhook503 int
	for i := 1; time.Since(stoppedAt) < pause; i++ {
		start := time.Now()
		status, _, body := servetest.Do("GET", "http://"+r.API+"/v1/me", in.key, nil)
		if status != http.StatusOK || time.Since(start) > time.Second {
			t.Errorf("GET /v1/me while kube-apiserver is frozen: %d in %s: %s", status, time.Since(start), body)
		}
		if status, _, body := servetest.Do("GET", "http://"+r.API+"/v1/calls?per_page=5", in.key, nil); status != http.StatusOK {
			t.Errorf("GET /v1/calls while kube-apiserver is frozen: %d %s", status, body)
		}
		calls = append(calls, report(t, r, in, servetest.UniqueRef("paused", i)))

		start = time.Now()
		status, header, body := servetest.Do("GET", "http://"+r.API+"/v1/webhooks", in.key, nil)
		took := time.Since(start)
		var msg struct {
			Message string `json:"message"`
		}
		if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || json.Unmarshal(body, &msg) != nil || msg.Message == "" {
			t.Errorf("GET /v1/webhooks while kube-apiserver is frozen: %d Retry-After %q %s", status, header.Get("Retry-After"), body)
		} else {
			webhook503++
		}
		if took > kubeAPITimeout+time.Second {
			t.Errorf("GET /v1/webhooks took %s with a kube-apiserver deadline of %s", took, kubeAPITimeout)
		}
		if status, _, _ := servetest.Do("GET", "http://"+r.Probes+"/readyz", "", nil); status != http.StatusOK {
			t.Errorf("/readyz while only kube-apiserver is down: %d", status)
		}
		if status, _, _ := servetest.Do("GET", "http://"+r.Probes+"/dependencyz/kube-apiserver", "", nil); status == http.StatusOK {
			t.Error("/dependencyz/kube-apiserver is healthy while kube-apiserver is frozen")
		}
	}
	resume()
	resumedAt := time.Now()
	if !r.Running() {
		t.Fatalf("the process exited while kube-apiserver was frozen:\n%s", servetest.Tail(r.LogPath, 30))
	}
	lostLease := r.LogContains("re-entering the leader election")
	// The replica keeps its identity across terms: it takes its own Lease back as soon as
	// kube-apiserver answers, not a lease duration after it first sees the Lease again.
	servetest.WaitFor(t, "the replica to lead again", 3*leaseDuration, func() bool { return r.LogCount("Successfully acquired lease") >= 2 })
	reacquired := time.Since(resumedAt)
	if h := e.leaseHolder(ctx, lease); h != holder {
		t.Errorf("the Lease is held by %q after the freeze, want the same identity %q", h, holder)
	}
	if reacquired >= leaseDuration {
		t.Errorf("the replica led again %s after kube-apiserver resumed, as long as the lease (%s): did it wait out its own Lease?", reacquired, leaseDuration)
	}
	tl := in.WaitAll(t, calls, 2*time.Minute)
	recovered := time.Since(resumedAt)
	if !r.Running() {
		t.Fatal("the process exited after kube-apiserver came back")
	}
	if status, _, body := servetest.Do("GET", "http://"+r.API+"/v1/webhooks", in.key, nil); status != http.StatusOK {
		t.Errorf("GET /v1/webhooks after kube-apiserver came back: %d %s", status, body)
	}
	if !lostLease {
		t.Errorf("the leader did not lose its Lease during a %s freeze (renew deadline %s)", pause, renewDeadline)
	}
	t.Logf("FIGURES apiserver-paused: frozen=%s webhook 503s=%d calls reported meanwhile=%d lost=0 repeats=%d all delivered %s after SIGCONT (lease lost: %v, led again %s after SIGCONT with the same identity)",
		resumedAt.Sub(stoppedAt).Round(10*time.Millisecond), webhook503, len(calls)-1, tl.Repeats, recovered.Round(10*time.Millisecond), lostLease,
		reacquired.Round(10*time.Millisecond))
}
