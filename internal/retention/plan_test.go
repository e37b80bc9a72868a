package retention

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func day(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }

func daily(from, to int) []store.Partition {
	var ps []store.Partition
	for d := from; d < to; d++ {
		ps = append(ps, store.Partition{Name: store.PartitionName("events", day(d)), From: day(d), To: day(d + 1)})
	}
	return ps
}

func TestPlan(t *testing.T) {
	c := Config{Window: 7 * 24 * time.Hour, PartitionWidth: 24 * time.Hour, AllowShortWindow: true}
	old := store.Partition{Name: "events_before_partitioning", To: day(3)}
	def := store.Partition{Name: "events_default", Default: true}
	noon := func(d int) time.Time { return day(d).Add(12 * time.Hour) }
	tests := []struct {
		name     string
		now      time.Time
		c        Config
		existing []store.Partition
		create   []Range
		drop     []string
	}{{
		name:     "covered three days ahead, nothing expired: nothing to do",
		now:      day(9).Add(23 * time.Hour),
		existing: append(daily(3, 13), old, def),
	}, {
		name:     "the next day is created when the window ahead slides",
		now:      noon(11),
		existing: append(daily(4, 14), def),
		create:   []Range{{day(14), day(15)}},
	}, {
		name:     "the partition from before partitioning goes once all of it is older than the window",
		now:      day(10),
		existing: append([]store.Partition{old}, append(daily(3, 14), def)...),
		drop:     []string{"events_before_partitioning"},
	}, {
		name:     "expired: everything ending at or before now-window, never the default",
		now:      day(12),
		existing: append([]store.Partition{old, def}, daily(3, 15)...),
		drop:     []string{"events_before_partitioning", "events_p20261103t000000", "events_p20261104t000000"},
	}, {
		name:     "no partitions at all: from the start of now's partition",
		now:      noon(10),
		existing: []store.Partition{def},
		create:   []Range{{day(10), day(11)}, {day(11), day(12)}, {day(12), day(13)}, {day(13), day(14)}},
	}, {
		name:     "a gap after the last partition is filled from where it ended (the default partition's rows move over)",
		now:      noon(10),
		existing: append(daily(7, 9), def),
		create: []Range{{day(9), day(10)}, {day(10), day(11)}, {day(11), day(12)}, {day(12), day(13)},
			{day(13), day(14)}},
	}, {
		name:     "a last partition older than the window is not followed: start at now",
		now:      noon(20),
		existing: daily(3, 5),
		create:   []Range{{day(20), day(21)}, {day(21), day(22)}, {day(22), day(23)}, {day(23), day(24)}},
		drop:     []string{"events_p20261103t000000", "events_p20261104t000000"},
	}, {
		name:     "a narrower width after daily partitions starts at the end of the last day, aligned",
		now:      day(10).Add(-2 * time.Minute),
		c:        Config{Window: time.Hour, PartitionWidth: time.Minute, Ahead: 3 * time.Minute, AllowShortWindow: true},
		existing: daily(9, 10),
		create:   []Range{{day(10), day(10).Add(time.Minute)}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := c
			if tt.c.Window != 0 {
				cfg = tt.c
			}
			create, drop := Plan(tt.now, cfg, tt.existing)
			var dropped []string
			for _, p := range drop {
				dropped = append(dropped, p.Name)
			}
			if diff := cmp.Diff(tt.create, create); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.drop, dropped); diff != "" {
				t.Errorf("drop (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"the default", Config{}, true},
		{"the shortest window the retries allow", Config{Window: MinWindow()}, true},
		{"shorter than the last retry", Config{Window: 10 * time.Hour}, false},
		{"shorter, allowed for a benchmark", Config{Window: 10 * time.Minute, PartitionWidth: time.Minute, AllowShortWindow: true}, true},
		{"partitions under a minute", Config{Window: time.Hour, PartitionWidth: time.Second, AllowShortWindow: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if MinWindow() < 12*time.Hour+36*time.Minute {
		t.Errorf("MinWindow() = %s, shorter than the retry schedule", MinWindow())
	}
}
