package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The page's generated table is the latest results file's, as make bench-docs writes it.
func TestBenchmarksPageMatchesLatestResults(t *testing.T) {
	updated, current, err := generate("../../docs/bench-results", "../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if updated != current {
		t.Fatal("docs/benchmarks.md's generated figures differ from the latest file in docs/bench-results: run make bench-docs")
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {0.123456, "0.123"}, {1.5, "1.5"}, {12.34, "12.3"}, {99.94, "99.9"},
		{100, "100"}, {935.6, "936"}, {1738.2, "1,738"}, {3734971, "3,734,971"}, {-2500, "-2,500"},
	} {
		if got := formatValue(c.in); got != c.want {
			t.Errorf("formatValue(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "# Page\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\n## Later\n"
	got, err := Splice(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Page\n\n" + beginMarker + "\nnew table\n" + endMarker + "\n\n## Later\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"no markers", endMarker + beginMarker, beginMarker + beginMarker + endMarker} {
		if _, err := Splice(bad, "x"); err == nil {
			t.Errorf("Splice(%q) gave no error", bad)
		}
	}
}

func writeRun(t *testing.T, dir string, r Run) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName(r)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Only the latest run's figures are rendered; an older run's are not.
func TestRenderHasOnlyTheLatestRun(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	old := Run{Commit: "1111111aaaa", Started: day.Add(-time.Hour), Finished: day.Add(-50 * time.Minute),
		Figures: []Figure{{Benchmark: "BenchmarkOld", Package: "example/old", Metric: "req/s", Value: 4242, Unit: "req/s", Command: "go test ./old"}}}
	latest := Run{Commit: "2222222bbbb", Started: day, Finished: day.Add(3 * time.Minute), Partial: "two benchmarks only.",
		Machine:    Machine{Cores: 2, Model: "AMD EPYC", MemoryKiB: 24684084},
		LoadBefore: Load{One: 7.64}, LoadAfter: Load{One: 5.1},
		Figures: []Figure{
			{Benchmark: "BenchmarkCallsAPI/search-name", Package: "github.com/switchboard-dev/switchboard/apiserver", Metric: "p99", Value: 12.345, Unit: "ms", Command: "go test ./apiserver"},
			{Benchmark: "BenchmarkAuthenticateAndCount", Package: "github.com/switchboard-dev/switchboard/internal/store", Metric: "ns/op", Value: 3734971, Unit: "ns/op", Command: "go test ./internal/store"},
		}}
	writeRun(t, dir, latest)
	writeRun(t, dir, old)
	run, name, err := Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if name != FileName(latest) {
		t.Fatalf("latest is %s, want %s", name, FileName(latest))
	}
	got := Render(run, name)
	for _, want := range []string{
		"commit `2222222`", "2026-11-28 05:00 to 05:03 UTC", "2 × AMD EPYC, 23.5 GiB", "load average 7.64 before, 5.1 after",
		"Partial run: two benchmarks only.",
		"    go test ./apiserver\n", "| BenchmarkCallsAPI/search-name | apiserver | p99 | 12.3 | ms |",
		"    go test ./internal/store\n", "| BenchmarkAuthenticateAndCount | internal/store | ns/op | 3,734,971 | ns/op |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered table lacks %q:\n%s", want, got)
		}
	}
	for _, stale := range []string{"BenchmarkOld", "4,242", "1111111"} {
		if strings.Contains(got, stale) {
			t.Errorf("rendered table has the older run's %q:\n%s", stale, got)
		}
	}
}

// Each benchmark's figures come from the latest run that measured it: a partial run replaces
// its own benchmark's and leaves the others' of the run before.
func TestCurrentKeepsEachBenchmarksLatestFigures(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	fig := func(bench string, v float64) Figure {
		return Figure{Benchmark: bench, Package: "example/pkg", Metric: "p99", Value: v, Unit: "ms", Command: "go test ./pkg"}
	}
	full := Run{Commit: "1111111aaaa", Started: day.Add(-2 * time.Hour), Finished: day.Add(-time.Hour),
		Figures: []Figure{fig("BenchmarkA/burst", 11), fig("BenchmarkA/paced", 12), fig("BenchmarkB", 13), fig("BenchmarkC", 14)}}
	partialA := Run{Commit: "2222222bbbb", Started: day.Add(-30 * time.Minute), Finished: day.Add(-20 * time.Minute), Partial: "A only.",
		Figures: []Figure{fig("BenchmarkA/burst", 21)}}
	partialC := Run{Commit: "3333333cccc", Started: day, Finished: day.Add(time.Minute), Partial: "C only.",
		Figures: []Figure{fig("BenchmarkC", 34)}}
	for _, r := range []Run{full, partialA, partialC} {
		writeRun(t, dir, r)
	}
	runs, err := Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		for _, f := range r.Figures {
			got = append(got, fmt.Sprintf("%s %s %v", r.Commit[:7], f.Benchmark, f.Value))
		}
	}
	want := []string{"3333333 BenchmarkC 34", "2222222 BenchmarkA/burst 21", "1111111 BenchmarkB 13"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("current figures:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	page := RenderCurrent(runs)
	for _, stale := range []string{"| 11 |", "| 12 |", "| 14 |"} {
		if strings.Contains(page, stale) {
			t.Errorf("the page has a superseded figure %q:\n%s", stale, page)
		}
	}
}

func TestLatestWithoutFiles(t *testing.T) {
	if _, _, err := Latest(t.TempDir()); err == nil {
		t.Fatal("no error for a directory without results files")
	}
}
