/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/retention"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// soakSetting reads a duration or number setting of the soak from the environment.
func soakSetting[T any](name string, def T, parse func(string) (T, error)) T {
	if v := os.Getenv(name); v != "" {
		if x, err := parse(v); err == nil {
			return x
		}
	}
	return def
}

// BenchmarkRetentionSoak is sustained end-to-end load with a retention of minutes: the
// platform reports calls through the ingestion API at BENCH_SOAK_RATE a second (default 100)
// for BENCH_SOAK_DURATION (default 30m), each queues call.ended, the engine delivers it signed
// over HTTPS to a local receiver, and the retention maintainer keeps BENCH_SOAK_RETENTION
// (default 5m) in partitions of BENCH_SOAK_PARTITION (default 1m), so partitions are created
// and dropped all along. Every minute it prints the outbox's and the history's size (tables,
// indexes, TOAST), the p99 event→delivery of that minute, the process's memory and the
// partitions dropped so far; at the end every reported call must have been delivered.
func BenchmarkRetentionSoak(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	duration := soakSetting("BENCH_SOAK_DURATION", 30*time.Minute, time.ParseDuration)
	rate := soakSetting("BENCH_SOAK_RATE", 100, strconv.Atoi)
	keep := soakSetting("BENCH_SOAK_RETENTION", 5*time.Minute, time.ParseDuration)
	width := soakSetting("BENCH_SOAK_PARTITION", time.Minute, time.ParseDuration)

	cp, kube, st := startBenchStack(b)
	platform := startPlatform(b, st)

	r := &e2eRun{benchRun: &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: benchkit.NewReceiver(), endpoints: 1},
		platform: platform.URL, reported: map[string]time.Time{}}
	defer r.rcv.Srv.Close()
	r.setup(clock.RealClock{})
	defer r.stop()
	r.number = "+442079460999"
	if _, err := st.CreateNumber(context.Background(), store.NewNumber{AccountID: r.tenant.Account.ID, E164: r.number, Label: "Soak"}); err != nil {
		b.Fatal(err)
	}
	// A fresh database: the migration's day-wide partitions (all empty) make way for
	// partitions of the soak's width.
	for _, table := range store.PartitionedTables {
		parts, err := st.Partitions(context.Background(), table)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range parts {
			if !p.Default {
				if err := st.DropPartition(context.Background(), table, p.Name); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	cfg := retention.Config{Window: keep, PartitionWidth: width, AllowShortWindow: true}
	maintainer := &retention.Maintainer{Store: st, Config: cfg, Clock: clock.RealClock{}, Log: logr.Discard()}
	mctx, stopMaintainer := context.WithCancel(context.Background())
	maintained := make(chan struct{})
	go func() { defer close(maintained); _ = maintainer.Start(mctx) }()
	defer func() { stopMaintainer(); <-maintained }()

	fmt.Printf("  soak: %d reports/s for %s, retention %s in partitions of %s, maintainer every %s\n",
		rate, duration, keep, width, maintainer.Interval())
	fmt.Printf("  %6s %9s %9s %8s %8s %10s %10s %10s %8s %8s %6s %7s\n", "minute", "reported", "delivered", "p50", "p99",
		"events", "history", "calls", "RSS", "heap", "parts", "dropped")
	firstPartition := time.Now().Truncate(width)
	// droppedSoFar: partitions of the soak's width that existed and are gone (the oldest
	// left starts that many widths after the first).
	droppedSoFar = func(parts []store.Partition) int {
		for _, p := range parts {
			if !p.Default {
				return int(p.From.Sub(firstPartition) / width)
			}
		}
		return 0
	}

	n := int(duration.Seconds()) * rate
	var offered atomic.Bool
	go func() { r.offer(n, rate); offered.Store(true) }()

	var (
		latencies []time.Duration
		minute    = 0
		start     = time.Now()
		sizes     [][2]int64
		p99s      []time.Duration
		delivered int
		// early holds deliveries whose report's answer had not been read yet: call → delivered at.
		early = map[string]time.Time{}
	)
	collect := func() {
		got := map[string]time.Time{} // one endpoint: event id → delivered at
		for _, d := range r.rcv.Take() {
			got[d.EventID] = d.At
		}
		ids := make([]uuid.UUID, 0, len(got))
		for id := range got {
			u, err := uuid.Parse(id)
			if err == nil {
				ids = append(ids, u)
			}
		}
		rows, err := storetest.SQL(b, st).Query(context.Background(), `SELECT e.id, c.public_id FROM events e JOIN calls c ON c.id = e.call_id
			WHERE e.id = ANY($1)`, ids)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for rows.Next() {
			var (
				id   uuid.UUID
				call string
			)
			if err := rows.Scan(&id, &call); err != nil {
				b.Fatal(err)
			}
			early[call] = got[id.String()]
		}
		for call, deliveredAt := range early {
			if at, ok := r.reported[call]; ok {
				latencies = append(latencies, deliveredAt.Sub(at))
				delete(r.reported, call)
				delete(early, call)
			}
		}
		delivered += len(ids)
	}
	line := func() {
		collect()
		minute++
		slices.Sort(latencies)
		evBytes, _ := st.TableBytes(context.Background(), store.EventsTable)
		hiBytes, _ := st.TableBytes(context.Background(), store.DeliveryHistoryTable)
		var callBytes int64
		_ = storetest.SQL(b, st).QueryRow(context.Background(), `SELECT pg_total_relation_size('calls')`).Scan(&callBytes)
		parts, _ := st.Partitions(context.Background(), store.EventsTable)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.mu.Lock()
		waiting := len(r.reported)
		r.mu.Unlock()
		p99 := benchkit.Pct(latencies, 0.99)
		fmt.Printf("  %6d %9d %9d %8s %8s %10s %10s %10s %8s %8s %6d %7d\n", minute, delivered+waiting, delivered,
			benchkit.Pct(latencies, 0.50).Round(time.Millisecond), p99.Round(time.Millisecond),
			mib(evBytes), mib(hiBytes), mib(callBytes), vmRSS(), mib(int64(ms.HeapAlloc)), len(parts), droppedSoFar(parts))
		sizes = append(sizes, [2]int64{evBytes, hiBytes})
		p99s = append(p99s, p99)
		latencies = latencies[:0]
	}
	for time.Since(start) < duration || !offered.Load() {
		time.Sleep(time.Until(start.Add(time.Duration(minute+1) * time.Minute)))
		line()
	}
	r.waitFor("every delivery", 5*time.Minute, func() bool { return r.rcv.Delivered() >= n })
	line()
	r.mu.Lock()
	lost := len(r.reported)
	r.mu.Unlock()
	lost += len(early) // delivered, but never answered to the platform
	fmt.Printf("  reported %d, delivered %d distinct (%d attempts), lost %d\n", n, r.rcv.Delivered(), r.rcv.Attempts.Load(), lost)
	if lost != 0 || r.rcv.Delivered() < n {
		b.Errorf("%d reported calls were never delivered", lost)
	}
	// The plateau: once the window is full, the outbox and the history stop growing. Compare
	// the last minute with the first minute after two windows (room for one partition).
	if settled := int((2*keep + width).Minutes()); len(sizes) > settled+2 {
		at, last := sizes[settled], sizes[len(sizes)-1]
		for i, table := range []string{"events", "history"} {
			fmt.Printf("  %s: %s at minute %d, %s at the end\n", table, mib(at[i]), settled+1, mib(last[i]))
			if float64(last[i]) > 1.5*float64(at[i]) {
				b.Errorf("%s grew from %s to %s after the window filled", table, mib(at[i]), mib(last[i]))
			}
		}
	}
	parts, err := st.Partitions(context.Background(), store.EventsTable)
	if err != nil {
		b.Fatal(err)
	}
	dropped := droppedSoFar(parts)
	fmt.Printf("  events partitions dropped during the run: %d\n", dropped)
	if duration > 2*keep && dropped < 2 {
		b.Errorf("only %d partitions were dropped in %s with a retention of %s", dropped, duration, keep)
	}
	b.ReportMetric(float64(slices.Max(p99s).Milliseconds()), "worst-minute-p99-ms")
}

var droppedSoFar func([]store.Partition) int

func mib(n int64) string { return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20)) }

// vmRSS is this process's resident memory (Linux).
func vmRSS() string {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for l := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return mib(int64(kb) << 10)
		}
	}
	return "?"
}
