/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// eachBenchProc calls visit with the pid, /proc/<pid>/stat ticks and a display name of this
// process ("manager+harness") and of the control-plane processes it started (kube-apiserver,
// etcd, postgres and their children; every PostgreSQL process is named "postgres"). Linux
// only; nothing elsewhere.
func eachBenchProc(visit func(pid int, name string, ticks int64)) {
	var walk func(pid int, self bool)
	walk = func(pid int, self bool) {
		name, ticks, ok := procStat(pid)
		if !ok {
			return
		}
		if self {
			name = "manager+harness"
		} else if strings.HasPrefix(name, "postgres") {
			name = "postgres"
		}
		visit(pid, name, ticks)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					walk(c, false)
				}
			}
		}
	}
	walk(os.Getpid(), true)
	if benchPostmaster > 0 {
		walk(benchPostmaster, false)
	}
}

// procCPU is the CPU time (user+system) of the benchmark's processes, by name.
func procCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	eachBenchProc(func(_ int, name string, ticks int64) {
		out[name] += time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
	})
	return out
}

// benchPostmaster is the benchmark's PostgreSQL server (pg_ctl detaches it from this process).
var benchPostmaster int

// findPostmaster sets benchPostmaster from the parent of one of st's backends.
func findPostmaster(st *store.Store) {
	var backend int
	if err := st.Pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) > 1 {
		benchPostmaster, _ = strconv.Atoi(f[1])
	}
}

func procStat(pid int) (string, int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 13 {
		return "", 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return s[open+1 : closing], u + st, true
}

// peakRSS formats the peak resident memory (VmHWM, since each process started) of the
// benchmark's processes; for PostgreSQL, of its largest process.
func peakRSS() string {
	peaks := map[string]int64{}
	eachBenchProc(func(pid int, name string, _ int64) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				peaks[name] = max(peaks[name], kb)
			}
		}
	})
	names := make([]string, 0, len(peaks))
	for n := range peaks {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		label := n
		if n == "postgres" {
			label = "postgres (largest process)"
		}
		parts = append(parts, fmt.Sprintf("%s %d MiB", label, peaks[n]>>10))
	}
	return strings.Join(parts, ", ")
}

// cpuSince formats the CPU time spent by each process since before.
func cpuSince(before map[string]time.Duration, wall time.Duration) string {
	after := procCPU()
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return after[names[i]]-before[names[i]] > after[names[j]]-before[names[j]] })
	parts := []string{}
	for _, n := range names {
		d := after[n] - before[n]
		if d < 100*time.Millisecond {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1fs (%.0f%% of a core)", n, d.Seconds(), 100*d.Seconds()/wall.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// apiserverProfile writes a CPU profile of kube-apiserver (its /debug/pprof, as cluster
// admin) of d to path, in the background.
func apiserverProfile(cfg *rest.Config, path string, d time.Duration) {
	go func() {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
			fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), int(d.Seconds())), nil)
		res, err := hc.Do(req)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, res.Body)
	}()
}

// apiRequests counts kube-apiserver requests on webhook resources by verb (and
// subresource), from its apiserver_request_total metric.
func apiRequests(cfg *rest.Config) map[string]float64 {
	out := map[string]float64{}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return out
	}
	res, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	label := func(line, name string) string {
		i := strings.Index(line, name+`="`)
		if i < 0 {
			return ""
		}
		rest := line[i+len(name)+2:]
		return rest[:strings.IndexByte(rest, '"')]
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		res := label(line, "resource")
		if res != "webhookdeliveries" && res != "webhookendpoints" {
			continue
		}
		key := res + " " + label(line, "verb")
		if sub := label(line, "subresource"); sub != "" {
			key += "/" + sub
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out
}

// requestsSince formats the requests made since before, per delivery.
func requestsSince(cfg *rest.Config, before map[string]float64, deliveries int) string {
	after := apiRequests(cfg)
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{}
	for _, k := range keys {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f (%.2f/delivery)", k, d, d/float64(deliveries)))
		}
	}
	return strings.Join(parts, ", ")
}

// pgStatements, when BENCH_PG_STATEMENTS is set (with PGCLUSTER_OPTIONS="-c
// shared_preload_libraries=pg_stat_statements"), resets pg_stat_statements and returns a
// function that prints the statements that took the most time since, per delivery.
func pgStatements(st *store.Store, deliveries func() int) func() {
	if os.Getenv("BENCH_PG_STATEMENTS") == "" {
		return func() {}
	}
	ctx := context.Background()
	if _, err := st.Pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return func() {}
	}
	if _, err := st.Pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return func() {}
	}
	return func() {
		n := float64(max(1, deliveries()))
		rows, err := st.Pool.Query(ctx, `SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 120)
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			ORDER BY total_exec_time DESC LIMIT 12`)
		if err != nil {
			fmt.Println("  pg_stat_statements:", err)
			return
		}
		defer rows.Close()
		fmt.Println("  PostgreSQL statements by execution time (per delivery):")
		for rows.Next() {
			var (
				calls, nrows int64
				ms           float64
				query        string
			)
			if err := rows.Scan(&calls, &ms, &nrows, &query); err != nil {
				fmt.Println("  pg_stat_statements:", err)
				return
			}
			fmt.Printf("    %8d calls (%.3f/delivery) %9.1f ms (%.4f ms/delivery) %8d rows  %s\n", calls, float64(calls)/n, ms, ms/n, nrows, query)
		}
	}
}
