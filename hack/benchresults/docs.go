package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	beginMarker = "<!-- BEGIN GENERATED: current figures from the latest file in docs/bench-results (make bench-docs) -->"
	// topLevel separates a benchmark from its case in a figure's name.
	topLevel  = "/"
	endMarker = "<!-- END GENERATED: current figures -->"
)

// NamedRun is a results file and its name.
type NamedRun struct {
	Run
	Name string
}

// readRuns reads every results file of dir, the latest start first.
func readRuns(dir string) ([]NamedRun, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var runs []NamedRun
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var r Run
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		runs = append(runs, NamedRun{Run: r, Name: filepath.Base(n)})
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no results file (*.json) in %s", dir)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.After(runs[j].Started)
		}
		return runs[i].Name > runs[j].Name
	})
	return runs, nil
}

// Latest returns the results file of dir with the latest start, and its name.
func Latest(dir string) (Run, string, error) {
	runs, err := readRuns(dir)
	if err != nil {
		return Run{}, "", err
	}
	return runs[0].Run, runs[0].Name, nil
}

// Current is, for every benchmark any results file of dir measured, the figures of the latest
// run that measured it: each run with only the figures it is the latest for, the latest run
// first, runs left with none left out. A partial run (one benchmark, say) so replaces that
// benchmark's figures and keeps the others' from the runs before it.
func Current(dir string) ([]NamedRun, error) {
	runs, err := readRuns(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []NamedRun
	for _, r := range runs {
		var keep []Figure
		measured := map[string]bool{}
		for _, f := range r.Figures {
			top, _, _ := strings.Cut(f.Benchmark, topLevel)
			key := f.Package + " " + top
			if !seen[key] {
				keep = append(keep, f)
				measured[key] = true
			}
		}
		for key := range measured {
			seen[key] = true
		}
		if len(keep) > 0 || len(out) == 0 {
			r.Figures = keep
			out = append(out, r)
		}
	}
	return out, nil
}

// RenderCurrent is Render of each of runs (see Current), one after the other.
func RenderCurrent(runs []NamedRun) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = Render(r.Run, r.Name)
	}
	return strings.Join(parts, "\n")
}

// Render is the markdown of the "Current figures" table: every figure of run, grouped by
// the command that produced it, and nothing else.
func Render(run Run, name string) string {
	var b strings.Builder
	short := run.Commit
	if len(short) > 7 {
		short = short[:7]
	}
	fmt.Fprintf(&b, "From [`%s`](bench-results/%s): commit `%s`", name, name, short)
	if run.Dirty {
		b.WriteString(" with uncommitted changes")
	}
	fmt.Fprintf(&b, ", %s to %s UTC; %d × %s, %s; load average %s before, %s after.",
		run.Started.UTC().Format("2006-01-02 15:04"), run.Finished.UTC().Format("15:04"),
		run.Machine.Cores, run.Machine.Model, formatGiB(run.Machine.MemoryKiB),
		formatValue(run.LoadBefore.One), formatValue(run.LoadAfter.One))
	if run.Partial != "" {
		fmt.Fprintf(&b, " Partial run: %s", run.Partial)
	}
	if run.GoTestExit != 0 {
		fmt.Fprintf(&b, " go test exited with status %d: a benchmark failed, and only those that passed are here.", run.GoTestExit)
	}
	b.WriteString("\n")

	var commands []string
	byCommand := map[string][]Figure{}
	for _, f := range run.Figures {
		if _, ok := byCommand[f.Command]; !ok {
			commands = append(commands, f.Command)
		}
		byCommand[f.Command] = append(byCommand[f.Command], f)
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "\n    %s\n\n", c)
		b.WriteString("| Benchmark | Package | Metric | Value | Unit |\n| --- | --- | --- | --- | --- |\n")
		figs := byCommand[c]
		sort.SliceStable(figs, func(i, j int) bool { return figs[i].Benchmark < figs[j].Benchmark })
		for _, f := range figs {
			pkg := strings.TrimPrefix(f.Package, "github.com/switchboard-dev/switchboard/")
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.Benchmark, pkg, f.Metric, formatValue(f.Value), f.Unit)
		}
	}
	if len(run.Figures) == 0 {
		b.WriteString("\nThe run has no figures.\n")
	}
	return b.String()
}

// formatValue gives three significant figures below 100 and whole numbers with thousands
// separators above.
func formatValue(v float64) string {
	if math.Abs(v) >= 100 {
		s := strconv.FormatInt(int64(math.Round(v)), 10)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		if neg {
			s = "-" + s
		}
		return s
	}
	return strconv.FormatFloat(roundSig(v, 3), 'f', -1, 64)
}

func roundSig(v float64, sig int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(sig-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func formatGiB(kib int64) string {
	return strconv.FormatFloat(roundSig(float64(kib)/(1<<20), 3), 'f', -1, 64) + " GiB"
}

// Splice replaces what lies between the markers of doc with generated.
func Splice(doc, generated string) (string, error) {
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	if i < 0 || j < i || strings.Count(doc, beginMarker) != 1 || strings.Count(doc, endMarker) != 1 {
		return "", fmt.Errorf("want one %q and after it one %q", beginMarker, endMarker)
	}
	return doc[:i+len(beginMarker)] + "\n" + generated + doc[j:], nil
}
