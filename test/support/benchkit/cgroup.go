/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUCgroupRoot is where the cgroup v1 cpu controller is mounted.
var CPUCgroupRoot = "/sys/fs/cgroup/cpu"

// cfsPeriod is the CFS bandwidth period every CPUCgroup uses (the kernel's default).
const cfsPeriod = 100 * time.Millisecond

// CPUCgroup holds the processes put in it to a CPU budget (a cgroup v1 cpu controller group
// with a CFS quota), as a container's CPU limit does. It is three files to write, so no
// cgroup library is brought in for it.
type CPUCgroup struct {
	dir string
}

// NewCPUCgroup makes the cgroup name under CPUCgroupRoot with a budget of cores (0.25 = a
// quarter of one core, whatever the number of processes and threads in it; 0 = no budget)
// and a weight of shares (cpu.shares: its part of a contended machine against each other
// process or group, 1024 each by default; 0 = the default).
func NewCPUCgroup(name string, cores float64, shares int64) (*CPUCgroup, error) {
	if cores < 0 || shares < 0 {
		return nil, fmt.Errorf("CPU budget %v, weight %d: must not be below 0", cores, shares)
	}
	dir := filepath.Join(CPUCgroupRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	c := &CPUCgroup{dir: dir}
	var err error
	if cores > 0 {
		quota := int64(cores * float64(cfsPeriod.Microseconds()))
		err = errors.Join(c.write("cpu.cfs_period_us", cfsPeriod.Microseconds()), c.write("cpu.cfs_quota_us", quota))
	}
	if shares > 0 {
		err = errors.Join(err, c.write("cpu.shares", shares))
	}
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return c, nil
}

func (c *CPUCgroup) write(file string, v int64) error {
	return os.WriteFile(filepath.Join(c.dir, file), []byte(strconv.FormatInt(v, 10)), 0o644)
}

// Add moves the process pid, all its threads, into the cgroup; what it starts later is born
// there.
func (c *CPUCgroup) Add(pid int) error {
	return c.write("cgroup.procs", int64(pid))
}

// Throttling is the cgroup's cpu.stat: how many CFS periods there were, in how many the
// budget ran out, and for how long the processes were held back in all.
type Throttling struct {
	Periods, Throttled int64
	ThrottledTime      time.Duration
}

// Throttling reads cpu.stat.
func (c *CPUCgroup) Throttling() (Throttling, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		return Throttling{}, err
	}
	var t Throttling
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "nr_periods":
			t.Periods = v
		case "nr_throttled":
			t.Throttled = v
		case "throttled_time":
			t.ThrottledTime = time.Duration(v)
		}
	}
	return t, nil
}

// Leave moves the process pid back to the root group.
func (c *CPUCgroup) Leave(pid int) error {
	return os.WriteFile(filepath.Join(CPUCgroupRoot, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// Remove deletes the cgroup; its processes must have exited.
func (c *CPUCgroup) Remove() error {
	return os.Remove(c.dir)
}
