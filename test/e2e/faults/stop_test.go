package faults

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/test/support/servetest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// (g) A replica stopped as a rolling update stops it (SIGTERM) while first attempts are in
// flight lets them finish: each receiver request is answered and recorded, the events are
// marked sent (so no replica sends them again) and the process exits within the stop grace.
func TestStopFinishesAttemptsInFlight(t *testing.T) {
	e := setup(t)
	r := e.startReplica(t, "replica-1", "fault-stop-drain")
	in := e.createEndpoint(t, r, "stop-drain")
	const answerIn = 3 * time.Second
	in.SetDelay(answerIn)

	const n = 6 // under the endpoint's 8 slots: all in flight at once
	var calls []string
	for i := range n {
		calls = append(calls, report(t, r, in, servetest.UniqueRef("stop-drain", i)))
	}
	servetest.WaitFor(t, "every attempt in flight", time.Minute, func() bool { return in.MaxInFlight(false) >= n })
	stoppedAt := time.Now()
	r.Stop()
	exited := time.Since(stoppedAt)
	if exited > 20*time.Second {
		t.Fatalf("the replica took %v to exit after SIGTERM (killed after 30 s); the stop grace is 10 s", exited)
	}
	if exited < answerIn/2 {
		t.Errorf("the replica exited %v after SIGTERM, before its attempts could be answered (%v)", exited, answerIn)
	}

	tl := in.Tally(calls)
	if len(tl.Missing) > 0 || tl.Repeats > 0 || tl.BadSignatures > 0 {
		t.Fatalf("missing %v, repeats %d, bad signatures %d", tl.Missing, tl.Repeats, tl.BadSignatures)
	}
	st := storetest.Open(t, e.DBURL)
	var unsent, succeeded int
	if err := storetest.SQL(t, st).QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM events v JOIN calls c ON c.id = v.call_id WHERE c.to_e164 = $1 AND v.dispatched_at IS NULL),
			(SELECT count(*) FROM webhook_delivery_history WHERE endpoint_public_id = $2 AND status = 'succeeded')`,
		in.number, in.endpoint).Scan(&unsent, &succeeded); err != nil {
		t.Fatal(err)
	}
	if unsent > 0 || succeeded != n {
		t.Log(servetest.Tail(r.LogPath, 30))
		t.Fatalf("after the stop: %d of %d events not marked sent (another replica would send them again), %d succeeded in the history",
			unsent, n, succeeded)
	}
	t.Logf("FIGURES stop-drain: %d attempts in flight at SIGTERM, answered after %v; exited %v after SIGTERM; all recorded, none to send again",
		n, answerIn, exited.Round(10*time.Millisecond))
}
