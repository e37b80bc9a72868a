// Package fleet shares webhook delivery among the replicas of the service. Every replica
// makes first attempts; the per-endpoint concurrency bound (--webhook-per-endpoint) holds
// across the fleet because each endpoint's slots are split among the live replicas, who
// announce themselves with heartbeat rows in PostgreSQL (Membership). PostgreSQL, not
// kube-apiserver: delivery needs PostgreSQL anyway, and keeps going while kube-apiserver is
// down. docs/delivery-fleet.md gives the reasons for this design.
package fleet

import (
	"hash/fnv"
	"slices"
	"time"
)

// Member is one replica as its heartbeat row announces it.
type Member struct {
	ID string
	// JoinedAt is the replica's first heartbeat; HeartbeatAt its latest.
	JoinedAt, HeartbeatAt time.Time
}

// Live are the members whose latest heartbeat is younger than ttl at now, ordered by id.
func Live(members []Member, now time.Time, ttl time.Duration) []Member {
	var live []Member
	for _, m := range members {
		if now.Sub(m.HeartbeatAt) < ttl {
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b Member) int { return compareStrings(a.ID, b.ID) })
	return live
}

// Share is how many of an endpoint's perEndpoint slots the replica self holds among the
// live members: the slots are dealt out by rendezvous hashing (each member ranked by a hash
// of the endpoint and its id), perEndpoint/n to each and one more to the first
// perEndpoint%n in rank. The shares of all members add up to perEndpoint exactly, every
// replica computes the same split from the same members, and when a member joins or leaves
// only the slots it holds or takes move (the ranks of the others keep their order).
//
// A fleet larger than perEndpoint would leave some members no slot for an endpoint (and
// the leader's retries to it nowhere to run): then each member gets one slot, and the
// fleet-wide bound is the number of members (Capped says so).
func Share(endpoint, self string, live []Member, perEndpoint int) int {
	n := len(live)
	if perEndpoint <= 0 || !slices.ContainsFunc(live, func(m Member) bool { return m.ID == self }) {
		return 0
	}
	if perEndpoint < n {
		return 1
	}
	rank, mine := 0, score(endpoint, self)
	for _, m := range live {
		if m.ID == self {
			continue
		}
		if s := score(endpoint, m.ID); s > mine || (s == mine && m.ID < self) {
			rank++
		}
	}
	share := perEndpoint / n
	if rank < perEndpoint%n {
		share++
	}
	return share
}

// Capped reports whether the fleet is larger than perEndpoint, so that Share gives each
// member one slot and the fleet-wide bound is len(live) instead of perEndpoint.
func Capped(live []Member, perEndpoint int) bool { return perEndpoint < len(live) }

// score is a member's rendezvous weight for an endpoint: FNV-1a, the same in every process.
func score(endpoint, member string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(endpoint))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(member))
	return mix(h.Sum64())
}

// mix spreads FNV's low-entropy high bits (splitmix64's finalizer), so that ranks do not
// follow the ids' common prefixes.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Standing is what a replica may do now, from its own heartbeats (see Decide).
type Standing struct {
	// Claim: the replica may claim outbox events and start first attempts.
	Claim bool
	// Reason says why not (for logs and metrics); empty when Claim.
	Reason string
}

// Reasons a replica holds back from claiming.
const (
	// ReasonNoHeartbeat: the replica has not yet written its first heartbeat.
	ReasonNoHeartbeat = "NoHeartbeat"
	// ReasonJoining: the others may not have seen this replica yet, and may still have
	// attempts in flight in the slots its share takes from them.
	ReasonJoining = "Joining"
	// ReasonHeartbeatLost: its last heartbeat is as old as the member TTL: the others may
	// count it gone and have taken its slots (PostgreSQL lost, or the process stalled).
	ReasonHeartbeatLost = "HeartbeatLost"
)

// Decide says whether a replica may claim and attempt at now: only once every other
// replica has had the time to see it and to finish the attempts in flight in the slots its
// arrival takes from them (joined at least settle ago), and only while its own latest
// successful heartbeat (lastBeat) is younger than ttl, since past that the others count it
// gone and share its slots among themselves. A replica that loses PostgreSQL thus stops
// claiming on its own; what it had claimed is claimed again by the others after the claim's
// lease.
func Decide(joinedAt, lastBeat, now time.Time, ttl, settle time.Duration) Standing {
	switch {
	case lastBeat.IsZero() || joinedAt.IsZero():
		return Standing{Reason: ReasonNoHeartbeat}
	case now.Sub(lastBeat) >= ttl:
		return Standing{Reason: ReasonHeartbeatLost}
	case now.Sub(joinedAt) < settle:
		return Standing{Reason: ReasonJoining}
	}
	return Standing{Claim: true}
}
