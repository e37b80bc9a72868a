package fleet

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func members(ids ...string) []Member {
	var ms []Member
	for _, id := range ids {
		ms = append(ms, Member{ID: id, JoinedAt: t0, HeartbeatAt: t0})
	}
	return ms
}

func TestLive(t *testing.T) {
	ms := []Member{{ID: "c", HeartbeatAt: t0}, {ID: "a", HeartbeatAt: t0.Add(-9 * time.Second)}, {ID: "b", HeartbeatAt: t0.Add(-10 * time.Second)}}
	for _, tc := range []struct {
		name string
		now  time.Time
		want []string
	}{
		{"all beat within the ttl", t0, []string{"a", "c"}},
		{"a heartbeat exactly ttl old is gone", t0.Add(time.Second), []string{"c"}},
		{"everyone silent for a ttl", t0.Add(10 * time.Second), nil},
	} {
		var got []string
		for _, m := range Live(ms, tc.now, 10*time.Second) {
			got = append(got, m.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: live %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The shares of all members add up to the bound for every endpoint, and differ by one at most.
func TestShareSplitsTheBoundExactly(t *testing.T) {
	for _, tc := range []struct {
		perEndpoint int
		fleet       []string
		wantTotal   int
	}{
		{8, []string{"a"}, 8},
		{8, []string{"a", "b"}, 8},
		{8, []string{"a", "b", "c"}, 8},
		{1, []string{"a", "b"}, 2}, // capped: one slot each
		{3, []string{"a", "b", "c", "d", "e"}, 5},
		{0, []string{"a"}, 0},
	} {
		live := members(tc.fleet...)
		for e := range 200 {
			ep := fmt.Sprintf("sb-acct/ep-%d", e)
			total, lo, hi := 0, tc.perEndpoint, 0
			for _, m := range live {
				s := Share(ep, m.ID, live, tc.perEndpoint)
				total += s
				lo, hi = min(lo, s), max(hi, s)
			}
			if total != tc.wantTotal || hi-lo > 1 {
				t.Fatalf("bound %d over %v, %s: shares add up to %d (want %d), spread %d..%d", tc.perEndpoint, tc.fleet, ep, total, tc.wantTotal, lo, hi)
			}
		}
		if got := Capped(live, tc.perEndpoint); got != (tc.perEndpoint < len(tc.fleet)) {
			t.Errorf("Capped(%d members, %d) = %v", len(live), tc.perEndpoint, got)
		}
	}
}

func TestShareOfANonMember(t *testing.T) {
	if s := Share("sb-acct/ep", "gone", members("a", "b"), 8); s != 0 {
		t.Fatalf("a replica not among the live members has share %d, want 0", s)
	}
	if s := Share("sb-acct/ep", "a", nil, 8); s != 0 {
		t.Fatalf("share with no live members %d, want 0", s)
	}
}

// Rendezvous: when a member leaves, the members that stay only gain slots (none of them
// loses one), so a departure never makes a survivor exceed its new share; and the extra
// slots are spread over endpoints, not given to one member for all of them.
func TestShareWhenAMemberLeaves(t *testing.T) {
	before, after := members("a", "b", "c"), members("a", "c")
	gained := map[string]int{}
	for e := range 300 {
		ep := fmt.Sprintf("sb-acct/ep-%d", e)
		for _, m := range after {
			b, a := Share(ep, m.ID, before, 8), Share(ep, m.ID, after, 8)
			if a < b {
				t.Fatalf("%s: %s had %d slots with b and %d without: a departure took slots from a survivor", ep, m.ID, b, a)
			}
			gained[m.ID] += a - b
		}
	}
	for _, id := range []string{"a", "c"} {
		if gained[id] < 300 {
			t.Errorf("%s gained %d slots over 300 endpoints when b left; want about half of b's ~800", id, gained[id])
		}
	}
}

// The split depends on the members only, not on the order a replica read them in.
func TestShareIgnoresOrder(t *testing.T) {
	x, y := members("a", "b", "c"), members("c", "a", "b")
	for e := range 50 {
		ep := fmt.Sprintf("sb-acct/ep-%d", e)
		for _, id := range []string{"a", "b", "c"} {
			if Share(ep, id, x, 8) != Share(ep, id, y, 8) {
				t.Fatalf("%s, %s: the share depends on the order of the members", ep, id)
			}
		}
	}
}

func TestDecide(t *testing.T) {
	const ttl, settle = 10 * time.Second, 12 * time.Second
	for _, tc := range []struct {
		name             string
		joined, lastBeat time.Time
		now              time.Time
		want             Standing
	}{
		{"never beat", time.Time{}, time.Time{}, t0, Standing{Reason: ReasonNoHeartbeat}},
		{"just joined: others may not see it yet", t0, t0, t0.Add(time.Second), Standing{Reason: ReasonJoining}},
		{"joined settle ago, beating", t0, t0.Add(11 * time.Second), t0.Add(settle), Standing{Claim: true}},
		{"heartbeat a ttl old: PostgreSQL lost", t0, t0.Add(20 * time.Second), t0.Add(30 * time.Second), Standing{Reason: ReasonHeartbeatLost}},
		{"heartbeat just under a ttl old", t0, t0.Add(20 * time.Second), t0.Add(30*time.Second - time.Millisecond), Standing{Claim: true}},
		{"lost the heartbeat while joining", t0, t0, t0.Add(ttl), Standing{Reason: ReasonHeartbeatLost}},
	} {
		if got := Decide(tc.joined, tc.lastBeat, tc.now, ttl, settle); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
