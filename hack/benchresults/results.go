package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
)

// Run is one results file: every figure of one `go test -bench` run and what it ran on.
type Run struct {
	Commit string `json:"commit"`
	// Dirty is true when tracked files differed from Commit while the benchmarks ran.
	Dirty    bool      `json:"dirty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Partial says what a run that is not the whole of `make bench` covers.
	Partial    string  `json:"partial,omitempty"`
	Machine    Machine `json:"machine"`
	LoadBefore Load    `json:"load_before"`
	LoadAfter  Load    `json:"load_after"`
	// GoTestExit is go test's exit status: a failed benchmark leaves no figures, the others stay.
	GoTestExit int      `json:"go_test_exit"`
	Figures    []Figure `json:"figures"`
}

// Machine is what the figures were measured on.
type Machine struct {
	Cores     int    `json:"cores"`
	Model     string `json:"model"`
	MemoryKiB int64  `json:"memory_kib"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// Load is the load average as /proc/loadavg gives it.
type Load struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
}

// Figure is one value a benchmark reported.
type Figure struct {
	Benchmark  string  `json:"benchmark"`
	Package    string  `json:"package"`
	Metric     string  `json:"metric"`
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"`
	Iterations int     `json:"iterations"`
	Command    string  `json:"command"`
}

// ParseBench reads `go test -bench` output and returns its figures, each with command.
// Lines benchfmt cannot read are returned as errors beside the figures.
func ParseBench(r io.Reader, name, command string) ([]Figure, []error) {
	var figs []Figure
	var errs []error
	rd := benchfmt.NewReader(r, name)
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			errs = append(errs, rec)
		case *benchfmt.Result:
			base, parts := rec.Name.Parts()
			bench := "Benchmark" + string(base)
			for _, p := range parts {
				if p[0] == '/' {
					bench += string(p)
				}
			}
			for _, v := range rec.Values {
				// benchfmt tidies ns/op into sec/op; the file keeps what the benchmark printed.
				value, unit := v.Value, v.Unit
				if v.OrigUnit != "" {
					value, unit = v.OrigValue, v.OrigUnit
				}
				metric, u := SplitUnit(unit)
				figs = append(figs, Figure{
					Benchmark: bench, Package: rec.GetConfig("pkg"), Metric: metric,
					Value: value, Unit: u, Iterations: rec.Iters, Command: command,
				})
			}
		}
	}
	if err := rd.Err(); err != nil {
		errs = append(errs, err)
	}
	return figs, errs
}

// unitWords are the units b.ReportMetric names end in after a dash ("p99-ms",
// "cpu-ms/delivery", "manager-cores").
var unitWords = []string{"ns", "µs", "us", "ms", "s", "KiB", "MiB", "B", "cores"}

// SplitUnit splits a reported unit such as "p99-ms" into the metric ("p99") and its unit
// ("ms"). A unit with no dash, or whose last dash is not followed by a unit word
// ("events/s-max"), is both metric and unit.
func SplitUnit(reported string) (metric, unit string) {
	i := strings.LastIndexByte(reported, '-')
	if i <= 0 || i == len(reported)-1 {
		return reported, reported
	}
	suffix := reported[i+1:]
	word, _, _ := strings.Cut(suffix, "/")
	for _, w := range unitWords {
		if word == w {
			return reported[:i], suffix
		}
	}
	return reported, reported
}

// ParseLoad reads the first three fields of /proc/loadavg.
func ParseLoad(s string) (Load, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return Load{}, fmt.Errorf("load average %q: want three fields", s)
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Load{}, fmt.Errorf("load average %q: %w", s, err)
		}
		v[i] = x
	}
	return Load{One: v[0], Five: v[1], Fifteen: v[2]}, nil
}

// ParseMachine reads the core count and model from /proc/cpuinfo and the memory from
// /proc/meminfo.
func ParseMachine(cpuinfo, meminfo io.Reader) (Machine, error) {
	var m Machine
	sc := bufio.NewScanner(cpuinfo)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "processor":
			m.Cores++
		case "model name":
			if m.Model == "" {
				m.Model = strings.TrimSpace(val)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	sc = bufio.NewScanner(meminfo)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return m, fmt.Errorf("MemTotal %q: %w", f[1], err)
			}
			m.MemoryKiB = kib
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if m.Cores == 0 || m.MemoryKiB == 0 {
		return m, fmt.Errorf("no processor or MemTotal found (cores %d, memory %d KiB)", m.Cores, m.MemoryKiB)
	}
	return m, nil
}

// FileName is the results file's name: its start time, then the short commit, so names
// sort by date.
func FileName(r Run) string {
	c := r.Commit
	if len(c) > 7 {
		c = c[:7]
	}
	if r.Dirty {
		c += "-dirty"
	}
	return r.Started.UTC().Format("2006-01-02T150405Z") + "-" + c + ".json"
}
