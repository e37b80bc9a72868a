package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	os.Exit(m.Run())
}

// The previous release's binary on this release's schema (every migration of this tree
// applied first): the public API, the platform API and a signed webhook delivery work.
func TestPreviousReleaseOnNewSchema(t *testing.T) {
	prev := servetest.PreviousRelease(t)
	e := servetest.Start(t)
	applied, err := store.Migrate(context.Background(), e.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	// The previous release's seed migrates with its own (older) migrations first: on a newer
	// schema that must be a no-op, as it is when its serve starts during a rollout.
	key := e.SeedDemo(t, prev).OwnerKey
	r := e.StartReplica(t, prev, "previous", "upgrade-compat")
	number := servetest.LiveNumber(t, r)
	base := "http://" + r.API + "/v1"

	for _, path := range []string{"/me", "/calls?per_page=5", "/numbers", "/contacts", "/webhooks", "/billing/ledger",
		"/analytics", "/notifications", "/tasks", "/blocked-callers", "/job-requests", "/sms/conversations"} {
		if status, _, body := servetest.Do("GET", base+path, key, nil); status != http.StatusOK {
			t.Errorf("GET /v1%s on the new schema: %d %s", path, status, body)
		}
	}
	ep, in := e.CreateEndpoint(t, r, key, "compat")
	var calls []string
	for i := range 3 {
		calls = append(calls, servetest.ReportCall(t, r, servetest.UniqueRef("compat", i), number))
	}
	tl := in.WaitAll(t, calls, 2*time.Minute)
	if tl.BadSignatures != 0 || len(tl.CallsWithTwoEvents) != 0 {
		t.Errorf("bad signatures %d, calls announced twice %v", tl.BadSignatures, tl.CallsWithTwoEvents)
	}
	if status, _, body := servetest.Do("GET", base+"/calls/"+calls[0], key, nil); status != http.StatusOK {
		t.Errorf("GET /v1/calls/{id} of a reported call: %d %s", status, body)
	}
	servetest.WaitFor(t, "the deliveries in the endpoint's history", time.Minute, func() bool {
		status, _, body := servetest.Do("GET", base+"/webhooks/"+ep.PublicID+"/deliveries", key, nil)
		var page struct {
			Deliveries []struct {
				Status string `json:"status"`
			} `json:"deliveries"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
			return false
		}
		delivered := 0
		for _, d := range page.Deliveries {
			if d.Status == "succeeded" {
				delivered++
			}
		}
		return delivered >= len(calls)
	})
	t.Logf("FIGURES compat: previous release on this tree's schema (%d migrations applied first); %d calls delivered, signatures verified",
		len(applied), len(calls))
}

// Two replicas of the previous release under load; this release's migrations run; the
// replicas are replaced one at a time by this release (each new one serving before an old
// one gets SIGTERM, as a Deployment's rolling update with maxUnavailable 0 does).
func TestRollingUpgradeUnderLoad(t *testing.T) {
	prev := servetest.PreviousRelease(t)
	next := servetest.BuildCurrent(t, t.TempDir())
	e := servetest.Start(t)
	key := e.SeedDemo(t, prev).OwnerKey // the database as the previous release left it
	const lease = "upgrade-rolling"
	oldA := e.StartReplica(t, prev, "old-a", lease)
	servetest.WaitFor(t, "old-a to lead", time.Minute, func() bool { return oldA.LogContains("Successfully acquired lease") })
	oldB := e.StartReplica(t, prev, "old-b", lease)
	number := servetest.LiveNumber(t, oldA)
	_, in := e.CreateEndpoint(t, oldA, key, "rolling")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leases := watchLease(ctx, e, lease)
	ld := startLoad(e, key, number, oldA, oldB)

	time.Sleep(3 * time.Second)
	out := e.Run(t, next, "migrate") // the rollout's first step: the new schema under the old replicas
	time.Sleep(3 * time.Second)

	newA := e.StartReplica(t, next, "new-a", lease)
	ld.replace(oldA, newA)
	stopped := map[string]time.Time{oldA.Name: time.Now()}
	oldA.Stop()
	time.Sleep(3 * time.Second)
	newB := e.StartReplica(t, next, "new-b", lease)
	ld.replace(oldB, newB)
	stopped[oldB.Name] = time.Now()
	oldB.Stop()
	servetest.WaitFor(t, "a replica of this release to lead", 3*servetest.LeaseDuration, func() bool {
		return newA.LogContains("Successfully acquired lease") || newB.LogContains("Successfully acquired lease")
	})
	time.Sleep(3 * time.Second)
	res := ld.stop()
	cancel()
	gap, holders := leases.result()

	in.WaitAll(t, res.calls, 2*time.Minute)
	time.Sleep(2 * time.Second) // a second deliverer would show up by now
	tl := in.Tally(res.calls)
	if len(res.bad) > 0 {
		t.Errorf("%d answers were 5xx other than 503 with Retry-After, e.g. %v", len(res.bad), res.bad[:min(5, len(res.bad))])
	}
	got := in.Deliveries()
	byTwo, redelivered := splitRedeliveries(tl.ByTwoSenders, got, stopped)
	if len(byTwo) > 0 || len(tl.CallsWithTwoEvents) > 0 || tl.BadSignatures > 0 {
		t.Errorf("events delivered by two replicas: %v (%s); calls announced twice: %v; bad signatures: %d",
			byTwo, deliveryTimes(byTwo, got, stopped), tl.CallsWithTwoEvents, tl.BadSignatures)
	}
	if len(redelivered) > 0 {
		t.Logf("delivered again by another replica after the first sender got SIGTERM (its send cut short, the event released; same event id): %v", redelivered)
	}
	if gap >= servetest.LeaseDuration {
		t.Errorf("a takeover took %s (last renewal of one holder to the next holder), longer than a lease (%s)", gap, servetest.LeaseDuration)
	}
	if holders < 2 {
		t.Errorf("the Lease had %d holders during the rollout; the leader did not move", holders)
	}
	if len(res.calls) < 50 {
		t.Errorf("only %d calls reported during the rollout: the load did not run", len(res.calls))
	}
	t.Logf("FIGURES rolling-upgrade: migrate said %q; calls=%d lost=0 repeats(same event id)=%d by-two-replicas=%d deliveries per sender=%v; requests=%d 503s=%d refused connections=%d other 5xx=%d; longest takeover (last renewal to next holder)=%s over %d holders (lease %s)",
		trimNL(out), len(res.calls), tl.Repeats, len(tl.ByTwoSenders), tl.Senders, res.requests, res.unavailable, res.refused, len(res.bad),
		gap.Round(10*time.Millisecond), holders, servetest.LeaseDuration)
}

func trimNL(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

// load reports calls and reads the public API on the live replicas, round robin, as a load
// balancer in front of them would; replace takes a replica out of the rotation before it is
// stopped (what the endpoints controller does when a pod starts terminating).
type load struct {
	e             *servetest.Env
	key, number   string
	mu            sync.Mutex
	live          []*servetest.Replica
	res           loadResult
	done, stopped chan struct{}
}

type loadResult struct {
	calls                          []string
	requests, unavailable, refused int
	bad                            []string
}

func startLoad(e *servetest.Env, key, number string, replicas ...*servetest.Replica) *load {
	l := &load{e: e, key: key, number: number, live: replicas, done: make(chan struct{}), stopped: make(chan struct{})}
	go l.run()
	return l
}

func (l *load) replace(old, new *servetest.Replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.live {
		if r == old {
			l.live[i] = new
		}
	}
}

func (l *load) pick(i int) *servetest.Replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[i%len(l.live)]
}

// check counts one answer.
func (l *load) check(what string, status int, h http.Header, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res.requests++
	switch {
	case status == 0:
		l.res.refused++
	case servetest.Bad5xx(status, h):
		l.res.bad = append(l.res.bad, what+": "+http.StatusText(status)+" "+string(body))
	case status == http.StatusServiceUnavailable:
		l.res.unavailable++
	}
}

func (l *load) run() {
	defer close(l.stopped)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		ref := servetest.UniqueRef("rolling", i)
		// A report the replica did not take (refused connection, 503) is sent again to the
		// next one, as the platform does; the same reference is recorded once.
		for try := 0; try < 10; try++ {
			r := l.pick(i + try)
			status, h, body := servetest.Do("POST", "http://"+r.Platform+"/platform/v1/calls", servetest.PlatformToken, servetest.Report(ref, l.number))
			l.check("report to "+r.Name, status, h, body)
			if id, err := servetest.CallID(status, body); err == nil {
				l.mu.Lock()
				l.res.calls = append(l.res.calls, id)
				l.mu.Unlock()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		r := l.pick(i)
		for _, path := range []string{"/v1/me", "/v1/calls?per_page=5", "/v1/webhooks"} {
			status, h, body := servetest.Do("GET", "http://"+r.API+path, l.key, nil)
			l.check("GET "+path+" on "+r.Name, status, h, body)
		}
	}
}

func (l *load) stop() loadResult {
	close(l.done)
	<-l.stopped
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
}

// leaseWatch polls the Lease and keeps the longest takeover: from the last renewal of one
// holder to the first moment another holds it (a release in between counts as no leader).
type leaseWatch struct {
	mu      sync.Mutex
	gap     time.Duration
	holders map[string]bool
	stopped chan struct{}
}

func watchLease(ctx context.Context, e *servetest.Env, name string) *leaseWatch {
	w := &leaseWatch{holders: map[string]bool{}, stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		var last string         // the last non-empty holder seen
		var lastRenew time.Time // its latest renewal seen
		for ctx.Err() == nil {
			holder, renewed := e.LeaseHolder(ctx, name)
			now := time.Now()
			w.mu.Lock()
			switch holder {
			case "":
			case last:
				lastRenew = renewed
			default:
				if last != "" {
					w.gap = max(w.gap, now.Sub(lastRenew))
				}
				last, lastRenew = holder, renewed
				w.holders[holder] = true
			}
			w.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

func (w *leaseWatch) result() (time.Duration, int) {
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gap, len(w.holders)
}

// splitRedeliveries sorts events delivered by two replicas into those two replicas delivered
// while both ran (byTwo: never allowed) and those another replica delivered again only after
// the first sender was told to stop (redelivered): a replica that gets SIGTERM cuts its
// first attempts short and releases their events, and when a cut-short request had reached
// the receiver the event arrives twice with the same id, which at-least-once allows. A request
// the first sender had on the wire as it was told to stop may reach the receiver just after
// (stopping is a signal, not an instant): up to inFlightAtStop after the stop counts as sent
// before it.
func splitRedeliveries(events []string, got []servetest.Delivery, stopped map[string]time.Time) (byTwo, redelivered []string) {
	for _, id := range events {
		var first *servetest.Delivery
		for i := range got {
			if d := &got[i]; d.EventID == id && (first == nil || d.At.Before(first.At)) {
				first = d
			}
		}
		stop, wasStopped := stopped[first.Sender]
		again := wasStopped && first.At.Before(stop.Add(inFlightAtStop))
		for _, d := range got {
			if d.EventID == id && d.Sender != first.Sender && d.At.Before(stop) {
				again = false // another replica delivered it while the first still ran
			}
		}
		if again {
			redelivered = append(redelivered, id)
		} else {
			byTwo = append(byTwo, id)
		}
	}
	return byTwo, redelivered
}

// deliveryTimes says who delivered each of the events when, against the times the replicas
// were told to stop.
func deliveryTimes(events []string, got []servetest.Delivery, stopped map[string]time.Time) string {
	var b strings.Builder
	for _, id := range events {
		fmt.Fprintf(&b, "%s:", id)
		for _, d := range got {
			if d.EventID == id {
				fmt.Fprintf(&b, " %s at %s", d.Sender, d.At.Format("15:04:05.000"))
			}
		}
		b.WriteString("; ")
	}
	for name, at := range stopped {
		fmt.Fprintf(&b, "%s told to stop at %s ", name, at.Format("15:04:05.000"))
	}
	return strings.TrimSpace(b.String())
}

// inFlightAtStop is how long after a replica is told to stop a request it had already sent
// may reach the receiver.
const inFlightAtStop = 2 * time.Second

func TestSplitRedeliveries(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	got := []servetest.Delivery{
		{EventID: "after-stop", Sender: "old-a", At: at(1)}, {EventID: "after-stop", Sender: "new-a", At: at(3)},
		{EventID: "both-running", Sender: "old-a", At: at(1)}, {EventID: "both-running", Sender: "new-a", At: at(1)},
		{EventID: "never-stopped", Sender: "new-a", At: at(1)}, {EventID: "never-stopped", Sender: "new-b", At: at(5)},
		// Arrived 300 ms after old-a was told to stop: on the wire as it stopped.
		{EventID: "on-the-wire", Sender: "old-a", At: at(2).Add(300 * time.Millisecond)}, {EventID: "on-the-wire", Sender: "new-a", At: at(3)},
		// Sent by old-a three seconds into its stop: not a request it had on the wire.
		{EventID: "sent-while-stopping", Sender: "old-a", At: at(5)}, {EventID: "sent-while-stopping", Sender: "new-a", At: at(6)},
	}
	byTwo, again := splitRedeliveries([]string{"after-stop", "both-running", "never-stopped", "on-the-wire", "sent-while-stopping"},
		got, map[string]time.Time{"old-a": at(2)})
	if !slices.Equal(byTwo, []string{"both-running", "never-stopped", "sent-while-stopping"}) ||
		!slices.Equal(again, []string{"after-stop", "on-the-wire"}) {
		t.Fatalf("byTwo = %v, redelivered = %v", byTwo, again)
	}
}
