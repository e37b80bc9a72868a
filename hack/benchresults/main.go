// Command benchresults turns `go test -bench` output into a results file
// (docs/bench-results/<start>-<commit>.json) and writes the "Current figures" table of
// docs/benchmarks.md from the latest such file.
//
//	benchresults convert -out DIR -commit SHA -started T -finished T \
//	    -load-before "$(cat /proc/loadavg)" -load-after "..." -command CMD [-partial TEXT] OUTPUT
//	benchresults docs [-check] -results DIR -doc docs/benchmarks.md
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchresults convert|docs [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "convert":
		err = convert(os.Args[2:])
	case "docs":
		err = docs(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want convert or docs", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchresults:", err)
		os.Exit(1)
	}
}

func convert(args []string) error {
	fs := flag.NewFlagSet("convert", flag.ExitOnError)
	out := fs.String("out", "docs/bench-results", "directory of the results files")
	commit := fs.String("commit", "", "commit measured (git rev-parse HEAD)")
	dirty := fs.Bool("dirty", false, "tracked files differed from the commit")
	started := fs.String("started", "", "start of the run, RFC 3339")
	finished := fs.String("finished", "", "end of the run, RFC 3339")
	loadBefore := fs.String("load-before", "", "/proc/loadavg before the run")
	loadAfter := fs.String("load-after", "", "/proc/loadavg after the run")
	command := fs.String("command", "", "the exact command that printed the output")
	partial := fs.String("partial", "", "what a run that is not all of make bench covers")
	exit := fs.Int("exit", 0, "go test's exit status")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *commit == "" || *command == "" {
		return errors.New("convert: want -commit, -command and one go test output file")
	}
	run := Run{Commit: *commit, Dirty: *dirty, Partial: *partial, GoTestExit: *exit}
	var err error
	if run.Started, err = time.Parse(time.RFC3339, *started); err != nil {
		return fmt.Errorf("-started: %w", err)
	}
	if run.Finished, err = time.Parse(time.RFC3339, *finished); err != nil {
		return fmt.Errorf("-finished: %w", err)
	}
	if run.LoadBefore, err = ParseLoad(*loadBefore); err != nil {
		return err
	}
	if run.LoadAfter, err = ParseLoad(*loadAfter); err != nil {
		return err
	}
	if run.Machine, err = readMachine(); err != nil {
		return err
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	figs, errs := ParseBench(f, fs.Arg(0), *command)
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "benchresults: line not read:", e)
	}
	run.Figures = figs
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(*out, FileName(run))
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("%d figures written to %s\n", len(figs), path)
	return nil
}

func readMachine() (Machine, error) {
	cpu, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return Machine{}, err
	}
	defer cpu.Close()
	mem, err := os.Open("/proc/meminfo")
	if err != nil {
		return Machine{}, err
	}
	defer mem.Close()
	m, err := ParseMachine(cpu, mem)
	if err != nil {
		return m, err
	}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(k))
	}
	m.Go = runtime.Version()
	return m, nil
}

func docs(args []string) error {
	fs := flag.NewFlagSet("docs", flag.ExitOnError)
	results := fs.String("results", "docs/bench-results", "directory of the results files")
	doc := fs.String("doc", "docs/benchmarks.md", "page whose generated table to write")
	check := fs.Bool("check", false, "fail, writing nothing, when the table differs from the latest results file")
	_ = fs.Parse(args)
	updated, current, err := generate(*results, *doc)
	if err != nil {
		return err
	}
	if updated == current {
		return nil
	}
	if *check {
		return fmt.Errorf("%s: the generated figures differ from the latest file in %s; run make bench-docs", *doc, *results)
	}
	return os.WriteFile(*doc, []byte(updated), 0o644)
}

// generate returns doc as it should be and as it is.
func generate(results, doc string) (updated, current string, err error) {
	runs, err := Current(results)
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		return "", "", err
	}
	updated, err = Splice(string(b), RenderCurrent(runs))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", doc, err)
	}
	return updated, string(b), nil
}
