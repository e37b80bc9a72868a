package fleet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// Two replicas beating into one PostgreSQL: the first delivers at once (alone), the second
// waits until the first has seen it and its attempts in the moved slots are over; the
// bound is split between them; when one stops beating the other takes every slot after the
// TTL, and the silent one stops claiming on its own at the same time.
func TestMembershipOverPostgres(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	const ep, bound = "sb-acct/ep-1", 8
	newMember := func(id string) *Membership {
		return &Membership{Store: st, Clock: clk, ID: id, Interval: 2 * time.Second, TTL: 10 * time.Second,
			AttemptTimeout: 10 * time.Second, Log: logr.Discard()}
	}
	a, b := newMember("replica-a"), newMember("replica-b")
	if s := a.Standing(); s.Claim || s.Reason != ReasonNoHeartbeat {
		t.Fatalf("before its first beat: %+v", s)
	}
	a.Beat(ctx)
	if s := a.Standing(); !s.Claim {
		t.Fatalf("a replica alone must deliver at once: %+v", s)
	}
	if got := a.Share(ep, bound); got != bound {
		t.Fatalf("alone: share %d, want %d", got, bound)
	}

	clk.Step(time.Second)
	b.Beat(ctx)
	if s := b.Standing(); s.Claim || s.Reason != ReasonJoining {
		t.Fatalf("b joined a running fleet: %+v, want to wait (Joining)", s)
	}
	clk.Step(time.Second)
	a.Beat(ctx) // a sees b and shrinks
	sa := a.Share(ep, bound)
	if sa == bound || sa == 0 {
		t.Fatalf("a's share with b live: %d", sa)
	}
	// b settles after Interval + AttemptTimeout, beating on the way.
	for range 6 {
		clk.Step(2 * time.Second)
		a.Beat(ctx)
		b.Beat(ctx)
	}
	if s := b.Standing(); !s.Claim {
		t.Fatalf("b after settling: %+v", s)
	}
	if sa, sb := a.Share(ep, bound), b.Share(ep, bound); sa+sb != bound {
		t.Fatalf("shares %d + %d, want %d in all", sa, sb, bound)
	}

	// b stops beating (its PostgreSQL is gone, or it died).
	for range 4 {
		clk.Step(2 * time.Second)
		a.Beat(ctx)
	}
	if got := b.Standing(); !got.Claim {
		t.Fatalf("b has not beaten for 8 s (TTL 10 s) and stopped already: %+v", got)
	}
	if got := a.Share(ep, bound); got == bound {
		t.Fatal("a took b's slots before b's TTL")
	}
	clk.Step(2 * time.Second)
	a.Beat(ctx)
	if s := b.Standing(); s.Claim || s.Reason != ReasonHeartbeatLost {
		t.Fatalf("b silent for a TTL: %+v, want HeartbeatLost", s)
	}
	if got := a.Share(ep, bound); got != bound {
		t.Fatalf("a's share once b is gone: %d, want %d", got, bound)
	}
	if got := len(a.Members()); got != 1 {
		t.Fatalf("live members %d, want 1", got)
	}

	// A clean shutdown deletes the row: the other counts it gone at its next beat.
	if err := st.LeaveDeliveryMember(ctx, "replica-a"); err != nil {
		t.Fatal(err)
	}
	b.Beat(ctx)
	if got := len(b.Members()); got != 1 {
		t.Fatalf("members after a left: %d, want only b", got)
	}
}
