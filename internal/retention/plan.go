// Package retention keeps the outbox (events) and the delivery history for a window and no
// longer: a leader-run Maintainer creates their partitions ahead of time and drops whole
// partitions once everything in them is older than the window (never a large DELETE), and it
// prunes the smaller tables that grow with traffic. The decisions are pure functions of the
// clock and the partitions that exist (Plan, Validate), table-tested; docs/retention.md is the
// operator's reference.
package retention

import (
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Defaults of Config.
const (
	DefaultWindow         = 30 * 24 * time.Hour
	DefaultPartitionWidth = 24 * time.Hour
	// DefaultCallProgressKeep: a call's progress rows (ringing, answered) are read when its
	// final report arrives; a day is far longer than any call.
	DefaultCallProgressKeep = 24 * time.Hour
)

// backlogMargin is added to the last retry in MinWindow: a delivery may wait in the outbox or
// behind back-pressure before its first attempt.
const backlogMargin = time.Hour

// MinWindow is the shortest window that keeps the event of every delivery still scheduled:
// its last retry comes send.RetryDelays after the first attempt, and a retry needs the
// event's body.
func MinWindow() time.Duration {
	var d time.Duration
	for _, r := range send.RetryDelays {
		d += r
	}
	return d + time.Duration(send.MaxAttempts)*send.DefaultTimeout + backlogMargin
}

// Config is what the Maintainer keeps.
type Config struct {
	// Window is how long events and delivery history are kept (--webhook-retention).
	Window time.Duration
	// PartitionWidth is the range of created_at one partition covers; data is kept between
	// Window and Window+PartitionWidth.
	PartitionWidth time.Duration
	// Ahead is how far past now partitions exist; default 3 partition widths.
	Ahead time.Duration
	// CallProgressKeep is how long call progress rows are kept.
	CallProgressKeep time.Duration
	// AllowShortWindow lets Window be shorter than MinWindow (benchmarks and tests only:
	// a retry then finds its event gone).
	AllowShortWindow bool
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.PartitionWidth == 0 {
		c.PartitionWidth = DefaultPartitionWidth
	}
	if c.Ahead == 0 {
		c.Ahead = 3 * c.PartitionWidth
	}
	if c.CallProgressKeep == 0 {
		c.CallProgressKeep = DefaultCallProgressKeep
	}
	return c
}

// Validate refuses a configuration that would lose data a delivery still needs.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.PartitionWidth < time.Minute:
		return fmt.Errorf("the retention partition width %s is shorter than a minute", c.PartitionWidth)
	case c.Window < MinWindow() && !c.AllowShortWindow:
		return fmt.Errorf("--webhook-retention=%s is shorter than the retries of a delivery still scheduled need its event (%s: the last retry comes %s after the first attempt, plus the attempts' timeouts and an hour of backlog); set at least %s",
			c.Window, MinWindow(), MinWindow()-backlogMargin-time.Duration(send.MaxAttempts)*send.DefaultTimeout, MinWindow())
	}
	return nil
}

// Range is a partition to create: From <= created_at < To.
type Range struct{ From, To time.Time }

// Plan decides, at now, which partitions of one table to create and which to drop, given the
// partitions that exist (store.Partitions):
//   - create: consecutive ranges from the end of the last dated partition (or, when there is
//     none or it ended more than a window ago, from the start of now's partition) until
//     now+Ahead is covered, each ending on a multiple of the width;
//   - drop: dated partitions whose every row is older than the window (To <= now-Window).
//
// The DEFAULT partition is never dropped.
func Plan(now time.Time, c Config, existing []store.Partition) (create []Range, drop []store.Partition) {
	c = c.WithDefaults()
	cutoff := now.Add(-c.Window)
	var end time.Time
	for _, p := range existing {
		if p.Default {
			continue
		}
		if !p.To.After(cutoff) {
			drop = append(drop, p)
		}
		if p.To.After(end) {
			end = p.To
		}
	}
	if !end.After(cutoff) {
		end = now.Truncate(c.PartitionWidth)
	}
	for until := now.Add(c.Ahead); end.Before(until); {
		to := end.Truncate(c.PartitionWidth).Add(c.PartitionWidth)
		create = append(create, Range{From: end, To: to})
		end = to
	}
	return create, drop
}

// CoveredUntil is where the dated partitions end (zero when there is none).
func CoveredUntil(existing []store.Partition) time.Time {
	var end time.Time
	for _, p := range existing {
		if !p.Default && p.To.After(end) {
			end = p.To
		}
	}
	return end
}
