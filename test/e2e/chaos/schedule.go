// Package chaos runs every fault of test/e2e/faults at once, on a schedule drawn from a seed,
// so that a failing run is replayed by its seed alone.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// Kind is one kind of fault.
type Kind int

const (
	// KillReplica sends SIGKILL to a replica and starts it again after Duration.
	KillReplica Kind = iota
	// TermReplica sends SIGTERM to a replica and starts it again after Duration.
	TermReplica
	// PostgresRestart stops PostgreSQL and starts it again after Duration.
	PostgresRestart
	// APIServerFreeze stops kube-apiserver (SIGSTOP) for Duration, then continues it.
	APIServerFreeze
	// ReceiverOutage makes one account's receiver unreachable for Duration.
	ReceiverOutage
)

// Kinds lists every kind, in the order the schedule draws them.
var Kinds = []Kind{KillReplica, TermReplica, PostgresRestart, APIServerFreeze, ReceiverOutage}

func (k Kind) String() string {
	switch k {
	case KillReplica:
		return "kill"
	case TermReplica:
		return "term"
	case PostgresRestart:
		return "postgres-restart"
	case APIServerFreeze:
		return "apiserver-freeze"
	case ReceiverOutage:
		return "receiver-outage"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Fault is one scheduled fault: it starts At after the run begins and lasts Duration.
// Target is the replica (KillReplica, TermReplica) or account (ReceiverOutage) it hits.
type Fault struct {
	Kind     Kind
	At       time.Duration
	Duration time.Duration
	Target   int
}

// End is when the fault is over.
func (f Fault) End() time.Duration { return f.At + f.Duration }

// Span bounds a duration drawn uniformly from [Min, Max].
type Span struct{ Min, Max time.Duration }

func (s Span) draw(r *rand.Rand) time.Duration {
	if s.Max <= s.Min {
		return s.Min
	}
	return s.Min + time.Duration(r.Int64N(int64(s.Max-s.Min)+1))
}

// Options bound a schedule.
type Options struct {
	// Replicas and Accounts are how many targets there are (at least 1 each).
	Replicas, Accounts int
	// Gap is the quiet time between the end of one fault of a kind and the start of the
	// next of that kind; the first of each kind starts within Gap.Max of the run's start.
	Gap Span
	// Length is how long each kind lasts (a replica's or PostgreSQL's downtime, a freeze,
	// an outage).
	Length map[Kind]Span
}

// DefaultOptions are the bounds for a run of length d: freezes of 5–30 s, and receiver
// outages of several minutes, scaled down to a tenth of a short run so that every kind
// still fits. An outage lasts under 6 minutes, so a delivery that fails as it starts gets its
// second retry (1 + 5 minutes after its first attempt) after it ends, within the run, and
// not the third, 30 minutes later.
func DefaultOptions(d time.Duration) Options {
	outage := Span{Min: 3 * time.Minute, Max: 5 * time.Minute}
	if d < 30*time.Minute {
		outage = Span{Min: d / 20, Max: d / 10}
	}
	gap := Span{Min: 20 * time.Second, Max: 60 * time.Second}
	if d < 10*time.Minute {
		gap = Span{Min: d / 20, Max: d / 6}
	}
	return Options{
		Replicas: 3,
		Accounts: 3,
		Gap:      gap,
		Length: map[Kind]Span{
			KillReplica:     {Min: 1 * time.Second, Max: 5 * time.Second},
			TermReplica:     {Min: 1 * time.Second, Max: 5 * time.Second},
			PostgresRestart: {Min: 2 * time.Second, Max: 10 * time.Second},
			APIServerFreeze: {Min: 5 * time.Second, Max: 30 * time.Second},
			ReceiverOutage:  outage,
		},
	}
}

// Schedule draws the faults of a run of length d from seed: each kind on its own track, so
// faults of one kind never overlap, and every fault ends within d. The same seed and
// options give the same schedule. The result is ordered by start, then kind.
func Schedule(seed int64, d time.Duration, o Options) []Fault {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5eed_c4a0_5c4e_d01e))
	var out []Fault
	for _, k := range Kinds {
		length := o.Length[k]
		at := Span{Max: o.Gap.Max}.draw(r)
		for {
			f := Fault{Kind: k, At: at, Duration: length.draw(r), Target: target(r, k, o)}
			if f.End() > d {
				break
			}
			out = append(out, f)
			at = f.End() + o.Gap.draw(r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].At != out[j].At {
			return out[i].At < out[j].At
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

func target(r *rand.Rand, k Kind, o Options) int {
	switch k {
	case KillReplica, TermReplica:
		return r.IntN(max(o.Replicas, 1))
	case ReceiverOutage:
		return r.IntN(max(o.Accounts, 1))
	}
	return 0
}
