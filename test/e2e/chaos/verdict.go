package chaos

import (
	"slices"
	"sort"
	"time"
)

// Receipt is one delivery a receiver accepted (answered 2xx to a live connection).
type Receipt struct {
	Account         int
	EventID, CallID string
	At              time.Time
}

// Cause is a fault that may repeat deliveries, From to To: a kill -9 (From = To = the kill)
// or a PostgreSQL outage.
type Cause struct{ From, To time.Time }

// Window widens a cause into the time in which an event's first delivery may have been
// made without its outcome being written (docs/reliability.md): an attempt in flight when a
// process is killed started at most the attempt timeout before the kill, and its outcome
// may not be written yet; while PostgreSQL is down no outcome is written, and an attempt
// answered just before it went down may still be waiting for its (batched) write.
type Window struct{ Before, After time.Duration }

// CrashWindow is the window of a kill -9 and of a PostgreSQL outage: the 10 s attempt
// timeout plus 5 s to write the outcome before it, 2 s after it for an answer already on
// its way.
var CrashWindow = Window{Before: 15 * time.Second, After: 2 * time.Second}

// Repeat is a delivery of an event after its first one.
type Repeat struct {
	Receipt
	// First is when the event was first received.
	First time.Time
}

// AttributeRepeats finds every delivery of an event after its first and charges it to the
// cause whose window holds the first delivery (the earliest such cause); byCause counts
// them per cause, and unexplained are the repeats no cause's window holds.
func AttributeRepeats(receipts []Receipt, causes []Cause, w Window) (byCause []int, unexplained []Repeat) {
	byCause = make([]int, len(causes))
	sorted := slices.Clone(receipts)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	first := map[string]time.Time{}
	for _, r := range sorted {
		f, seen := first[r.EventID]
		if !seen {
			first[r.EventID] = r.At
			continue
		}
		k := -1
		for i, c := range causes {
			if !f.Before(c.From.Add(-w.Before)) && !f.After(c.To.Add(w.After)) && (k < 0 || c.From.Before(causes[k].From)) {
				k = i
			}
		}
		if k < 0 {
			unexplained = append(unexplained, Repeat{Receipt: r, First: f})
			continue
		}
		byCause[k]++
	}
	return byCause, unexplained
}

// FirstAfter is how long after from the earliest of times at or after from is; ok is false
// when none is.
func FirstAfter(times []time.Time, from time.Time) (d time.Duration, ok bool) {
	for _, t := range times {
		if t.Before(from) {
			continue
		}
		if !ok || t.Sub(from) < d {
			d, ok = t.Sub(from), true
		}
	}
	return d, ok
}

// Spread is the median and maximum of a set of durations (zero for none).
func Spread(ds []time.Duration) (median, maximum time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// MemoryBound is the most resident memory a replica may hold at the end of a run: grown by
// at most a half over the largest replica after warm-up, plus 32 MiB for caches that fill
// as the run goes (connection pools, the informer caches of the WebhookDeliveries).
func MemoryBound(warmMax int64) int64 {
	return warmMax + warmMax/2 + 32<<20
}
