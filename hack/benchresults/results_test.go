package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// testdata/go-test-bench.txt is go test's own output, as hack/bench/go-bench.sh keeps it, of
//
//	SWITCHBOARD_BENCH_CALLS=2000 go test -p 1 -run '^$' -bench 'BenchmarkCallsAPI|BenchmarkAuthenticateAndCount' -benchtime 1x ./internal/store ./apiserver
func TestParseBenchOnRealOutput(t *testing.T) {
	f, err := os.Open("testdata/go-test-bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const cmd = "SWITCHBOARD_BENCH_CALLS=2000 go test ./internal/store ./apiserver"
	figs, errs := ParseBench(f, "go-test-bench.txt", cmd)
	if len(errs) != 0 {
		t.Errorf("lines not read: %v", errs)
	}
	type key struct{ bench, metric string }
	got := map[key]Figure{}
	for _, fig := range figs {
		k := key{fig.Benchmark, fig.Metric}
		if _, dup := got[k]; dup {
			t.Errorf("%v twice", k)
		}
		got[k] = fig
		if fig.Command != cmd || fig.Iterations != 1 {
			t.Errorf("%v: command %q, iterations %d", k, fig.Command, fig.Iterations)
		}
	}
	for _, want := range []Figure{
		{Benchmark: "BenchmarkAuthenticateAndCount", Package: "github.com/switchboard-dev/switchboard/internal/store", Metric: "ns/op", Unit: "ns/op", Value: 6996816},
		{Benchmark: "BenchmarkCallsAPI/list-default", Package: "github.com/switchboard-dev/switchboard/apiserver", Metric: "req/s", Unit: "req/s", Value: 989.8},
		{Benchmark: "BenchmarkCallsAPI/search-name", Package: "github.com/switchboard-dev/switchboard/apiserver", Metric: "p99", Unit: "ms", Value: 160.7},
		{Benchmark: "BenchmarkCallsAPI/total-exact", Package: "github.com/switchboard-dev/switchboard/apiserver", Metric: "calls", Unit: "calls", Value: 1923},
	} {
		g, ok := got[key{want.Benchmark, want.Metric}]
		if !ok {
			t.Errorf("no %s %s in %v", want.Benchmark, want.Metric, figs)
			continue
		}
		if g.Package != want.Package || g.Unit != want.Unit || g.Value != want.Value {
			t.Errorf("%s %s = %+v, want %+v", want.Benchmark, want.Metric, g, want)
		}
	}
	// ReportMetric(0, "ns/op") drops ns/op: the cases that measure req/s have none.
	if _, ok := got[key{"BenchmarkCallsAPI/list-default", "ns/op"}]; ok {
		t.Error("list-default has an ns/op its benchmark removed")
	}
	if n := len(figs); n != 34 {
		t.Errorf("%d figures, want 34", n)
	}
}

func TestParseBenchReportsUnreadableLines(t *testing.T) {
	in := "pkg: example/p\nBenchmarkGood-2 1 12.5 req/s\nBenchmarkBroken-2 1 12.5\n"
	figs, errs := ParseBench(strings.NewReader(in), "in", "go test ./p")
	if len(figs) != 1 || figs[0].Benchmark != "BenchmarkGood" || figs[0].Package != "example/p" {
		t.Errorf("figures %+v", figs)
	}
	if len(errs) != 1 {
		t.Errorf("errors %v, want one for BenchmarkBroken", errs)
	}
}

func TestSplitUnit(t *testing.T) {
	for _, c := range []struct{ in, metric, unit string }{
		{"ns/op", "ns/op", "ns/op"},
		{"req/s", "req/s", "req/s"},
		{"p99-ms", "p99", "ms"},
		{"worst-minute-p99-ms", "worst-minute-p99", "ms"},
		{"cpu-ms/delivery", "cpu", "ms/delivery"},
		{"pg-cpu-µs/event", "pg-cpu", "µs/event"},
		{"manager-cores", "manager", "cores"},
		{"audio-s", "audio", "s"},
		{"events/s-max", "events/s-max", "events/s-max"},
		{"max-per-endpoint", "max-per-endpoint", "max-per-endpoint"},
		{"%delivered", "%delivered", "%delivered"},
		{"-ms", "-ms", "-ms"},
		{"p99-", "p99-", "p99-"},
	} {
		if m, u := SplitUnit(c.in); m != c.metric || u != c.unit {
			t.Errorf("SplitUnit(%q) = %q, %q; want %q, %q", c.in, m, u, c.metric, c.unit)
		}
	}
}

func TestParseLoad(t *testing.T) {
	got, err := ParseLoad("7.64 5.77 7.19 10/343 7570\n")
	if err != nil || got != (Load{7.64, 5.77, 7.19}) {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1.0 2.0", "1.0 x 3.0"} {
		if _, err := ParseLoad(bad); err == nil {
			t.Errorf("ParseLoad(%q) gave no error", bad)
		}
	}
}

func TestParseMachine(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	meminfo := "MemTotal:       24684084 kB\nMemFree:         1234 kB\n"
	got, err := ParseMachine(strings.NewReader(cpuinfo), strings.NewReader(meminfo))
	if err != nil || got != (Machine{Cores: 2, Model: "AMD EPYC 7B13", MemoryKiB: 24684084}) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := ParseMachine(strings.NewReader(""), strings.NewReader(meminfo)); err == nil {
		t.Error("no error without processors")
	}
}

func TestFileNameSortsByStart(t *testing.T) {
	at := time.Date(2026, 11, 28, 4, 50, 7, 0, time.FixedZone("CET", 3600))
	if got := FileName(Run{Commit: "09e53f0c0ffee", Started: at}); got != "2026-11-28T035007Z-09e53f0.json" {
		t.Errorf("got %q", got)
	}
	if got := FileName(Run{Commit: "09e53f0c0ffee", Dirty: true, Started: at}); got != "2026-11-28T035007Z-09e53f0-dirty.json" {
		t.Errorf("dirty: got %q", got)
	}
}
