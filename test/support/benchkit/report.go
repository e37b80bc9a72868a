/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Latencies returns the event-to-delivery times of the endpoints in paths (all when none),
// sorted, and the time of the last delivery; created maps each event id to when it was made.
func Latencies(rcv *Receiver, created map[uuid.UUID]time.Time, paths ...string) ([]time.Duration, time.Time) {
	var out []time.Duration
	var last time.Time
	rcv.each(func(id, path string, at time.Time) {
		if len(paths) > 0 && !slices.Contains(paths, path) {
			return
		}
		out = append(out, at.Sub(created[uuid.MustParse(id)]))
		if at.After(last) {
			last = at
		}
	})
	slices.Sort(out)
	return out, last
}

// Pct is the p-quantile (0..1) of sorted d.
func Pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// Report prints and reports (deliveries/s, p50-ms, p99-ms) the deliveries received since
// the first event was made, and the deliveries received per 5 s, to show stalls.
func Report(b *testing.B, name string, rcv *Receiver, created map[uuid.UUID]time.Time, paths ...string) {
	lat, last := Latencies(rcv, created, paths...)
	first := time.Now()
	for _, t := range created {
		if t.Before(first) {
			first = t
		}
	}
	secs := last.Sub(first).Seconds()
	buckets := make([]int, int(secs/5)+1)
	rcv.each(func(_, _ string, at time.Time) {
		if i := int(at.Sub(first).Seconds() / 5); i >= 0 && i < len(buckets) {
			buckets[i]++
		}
	})
	fmt.Printf("  received per 5 s: %v\n", buckets)
	b.ReportMetric(float64(len(lat))/secs, "deliveries/s")
	b.ReportMetric(float64(Pct(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(Pct(lat, 0.99).Milliseconds()), "p99-ms")
	fmt.Printf("%s: %d deliveries in %.1fs = %.0f/s; event→delivery p50 %v, p99 %v\n", name, len(lat), secs,
		float64(len(lat))/secs, Pct(lat, 0.5).Round(time.Millisecond), Pct(lat, 0.99).Round(time.Millisecond))
}
