/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SelfName is how the benchmark process itself is shown.
var SelfName = "manager+harness"

var (
	procMu     sync.Mutex
	postmaster int                // the benchmark's PostgreSQL server (pg_ctl detaches it from this process)
	procNames  = map[int]string{} // display names of child processes, by pid
)

// NameProc shows the process pid (a child of the benchmark) and its descendants as name.
func NameProc(pid int, name string) {
	procMu.Lock()
	defer procMu.Unlock()
	procNames[pid] = name
}

// eachProc calls visit with the pid, /proc/<pid>/stat ticks and a display name of this
// process (SelfName) and of the processes it started (kube-apiserver, etcd, a peer's
// processes, and their children) and of PostgreSQL (every PostgreSQL process is named
// "postgres"). Linux only; nothing elsewhere.
func eachProc(visit func(pid int, name string, ticks int64)) {
	procMu.Lock()
	pm, names := postmaster, make(map[int]string, len(procNames))
	for pid, n := range procNames {
		names[pid] = n
	}
	procMu.Unlock()
	// inherited is the name of the nearest named ancestor (NameProc), if any: a named
	// process's children (a server's worker, an Erlang VM under its start script) are
	// counted as it.
	var walk func(pid int, self bool, inherited string)
	walk = func(pid int, self bool, inherited string) {
		name, ticks, ok := procStat(pid)
		if !ok {
			return
		}
		if self {
			name = SelfName
		} else if n, ok := names[pid]; ok {
			name, inherited = n, n
		} else if inherited != "" {
			name = inherited
		} else if strings.HasPrefix(name, "postgres") {
			name = "postgres"
		}
		visit(pid, name, ticks)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					walk(c, false, inherited)
				}
			}
		}
	}
	walk(os.Getpid(), true, "")
	if pm > 0 {
		walk(pm, false, "")
	}
}

// ProcCPU is the CPU time (user+system) of the benchmark's processes, by name.
func ProcCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	eachProc(func(_ int, name string, ticks int64) {
		out[name] += time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
	})
	return out
}

// Settle waits until the benchmark's processes other than this one have used less than idle
// of a core for a whole window (say, kube-apiserver's work after many objects were made, or a
// new manager's first reconciles), or until timeout; it returns how long it waited.
func Settle(idle float64, window, timeout time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < timeout {
		before := ProcCPU()
		time.Sleep(window)
		var used time.Duration
		for name, d := range ProcCPU() {
			if name != SelfName {
				used += d - before[name]
			}
		}
		if used.Seconds()/window.Seconds() < idle {
			break
		}
	}
	return time.Since(start)
}

// FindPostmaster counts the PostgreSQL server with the backend process backend (from
// pg_backend_pid(); the server is its parent) among the benchmark's processes.
func FindPostmaster(backend int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) > 1 {
		procMu.Lock()
		postmaster, _ = strconv.Atoi(f[1])
		procMu.Unlock()
	}
}

// CountPostmaster counts the PostgreSQL server whose postmaster is pid (pgcluster's
// ServerPID) among the benchmark's processes.
func CountPostmaster(pid int) {
	procMu.Lock()
	postmaster = pid
	procMu.Unlock()
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

// PeakRSS formats the peak resident memory (VmHWM, since each process started) of the
// benchmark's processes; for PostgreSQL, of its largest process.
func PeakRSS() string {
	peaks := map[string]int64{}
	eachProc(func(pid int, name string, _ int64) {
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

// CPUSince formats the CPU time spent by each process since before.
func CPUSince(before map[string]time.Duration, wall time.Duration) string {
	after := ProcCPU()
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

// CPUPerDelivery formats each process's CPU time per delivery since before, and their sum;
// it also returns the sum in milliseconds per delivery.
func CPUPerDelivery(before map[string]time.Duration, deliveries int) (string, float64) {
	after := ProcCPU()
	names := make([]string, 0, len(after))
	var total time.Duration
	for n := range after {
		names = append(names, n)
		total += after[n] - before[n]
	}
	sort.Slice(names, func(i, j int) bool { return after[names[i]]-before[names[i]] > after[names[j]]-before[names[j]] })
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(deliveries) }
	parts := []string{}
	for _, n := range names {
		if d := after[n] - before[n]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", n, ms(d)))
		}
	}
	return fmt.Sprintf("%.2f ms in all (%s)", ms(total), strings.Join(parts, ", ")), ms(total)
}

// RSS is the resident memory (VmRSS) now of the benchmark's processes, by name, summed over
// the processes of a name.
func RSS() map[string]int64 {
	out := map[string]int64{}
	eachProc(func(pid int, name string, _ int64) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				out[name] += kb << 10
			}
		}
	})
	return out
}
