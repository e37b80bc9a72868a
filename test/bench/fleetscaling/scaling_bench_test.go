/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package fleetscaling

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// endpoints is how many webhook endpoints the account has (the most an account may have);
// every report fans out to all of them.
const endpoints = 5

// callers is how many different numbers the reports come from.
const callers = 500

// config is what the benchmark's environment variables ask for.
type config struct {
	cores    float64 // BENCH_SCALE_CPU: each replica's CPU budget, in cores
	shares   int64   // BENCH_SCALE_SHARES: cpu.shares of the benchmark's groups (0 = the kernel's 1024)
	reports  int     // BENCH_SCALE_EVENTS: calls reported in the burst (each is delivered to every endpoint)
	replicas []int   // BENCH_SCALE_REPLICAS: the fleet sizes to measure, in order
}

func readConfig() (config, error) {
	c := config{cores: 0.25, reports: 1000, replicas: []int{1, 2, 3}}
	if v := os.Getenv("BENCH_SCALE_CPU"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return c, fmt.Errorf("BENCH_SCALE_CPU=%q: want a number of cores above 0", v)
		}
		c.cores = f
	}
	if v := os.Getenv("BENCH_SCALE_SHARES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 2 || n > 262144 {
			return c, fmt.Errorf("BENCH_SCALE_SHARES=%q: want cpu.shares from 2 to 262144", v)
		}
		c.shares = n
	}
	if v := os.Getenv("BENCH_SCALE_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("BENCH_SCALE_EVENTS=%q: want a number of reports above 0", v)
		}
		c.reports = n
	}
	if v := os.Getenv("BENCH_SCALE_REPLICAS"); v != "" {
		c.replicas = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return c, fmt.Errorf("BENCH_SCALE_REPLICAS=%q: want replica counts like 1,2,3", v)
			}
			c.replicas = append(c.replicas, n)
		}
	}
	return c, nil
}

// fleetRun is what one fleet size measured.
type fleetRun struct {
	replicas        int
	deliveries      int
	wall            time.Duration // first report to last delivery
	sampled         time.Duration // over which CPU was counted (the burst, and up to 200 ms of polling after)
	rate, steady    float64       // deliveries/s over wall; over the middle 80% of deliveries
	reportRate      float64       // reports answered per second
	p50, p99        time.Duration // report (its start) to delivery
	maxAtOnce       int           // most requests one endpoint was answering at once in the burst
	boundAtOnce     int           // the same with every answer held back (the endpoints the bottleneck)
	perReplica      []int         // deliveries each replica sent, in start order
	unknownSender   int           // deliveries whose sending process could not be told
	repeats         int           // deliveries beyond the first of an event
	cpu             map[string]time.Duration
	replicaNames    []string
	throttled       []float64 // share of CFS periods in which each replica's budget ran out
	machineBusy     float64   // cores busy on the whole machine (every process, ours or not)
	loadBefore, end string    // /proc/loadavg at the start and end of the burst
}

// BenchmarkFleetScaling delivers a burst of call reports, each fanned out to 5 endpoints, with
// 1, 2 and 3 replicas of `switchboard serve` (separate processes, leader election on, the
// shipped defaults), each replica held to the same CPU budget by a cgroup; PostgreSQL,
// kube-apiserver, etcd, the receiver and the load generator are not held. It fails if an
// endpoint ever receives more requests at once than the fleet-wide --webhook-per-endpoint, or
// if a delivery is missing. docs/benchmarks.md, "Scaling across replicas".
func BenchmarkFleetScaling(b *testing.B) {
	cfg, err := readConfig()
	if err != nil {
		b.Fatal(err)
	}
	probe, err := benchkit.NewCPUCgroup(fmt.Sprintf("switchboard-bench-%d-probe", os.Getpid()), cfg.cores, cfg.shares)
	if err != nil {
		b.Skipf("no CPU budget for the replicas: cannot create a cgroup under %s (cgroup v1 cpu controller, writable: run as root): %v",
			benchkit.CPUCgroupRoot, err)
	}
	if err := probe.Remove(); err != nil {
		b.Fatal(err)
	}
	if cfg.shares > 0 {
		favourTheRest(b, cfg.shares)
	}

	e := servetest.Start(b)
	bin := servetest.BuildCurrent(b, e.Dir)
	bound := perEndpointDefault(b, bin)
	pm, err := e.PG.ServerPID()
	if err != nil {
		b.Fatal(err)
	}
	benchkit.CountPostmaster(pm)
	benchkit.SelfName = "harness (receiver + load)"
	demo := e.SeedDemo(b, bin)
	fmt.Printf("fleet scaling: %d reports × %d endpoints per fleet size, each replica held to %.2f cores, cpu.shares %d, fleet-wide per-endpoint bound %d\n",
		cfg.reports, endpoints, cfg.cores, cmp.Or(cfg.shares, 1024), bound)

	s := &scaling{cfg: cfg, env: e, bin: bin, bound: bound, ownerKey: demo.OwnerKey}
	var runs []fleetRun
	for _, n := range cfg.replicas {
		b.Run(fmt.Sprintf("replicas-%d", n), func(b *testing.B) {
			run := s.measure(b, n)
			runs = append(runs, run)
			b.ReportMetric(run.rate, "deliveries/s")
			b.ReportMetric(run.steady, "steady-deliveries/s")
			b.ReportMetric(float64(run.p50.Milliseconds()), "p50-ms")
			b.ReportMetric(float64(run.p99.Milliseconds()), "p99-ms")
			b.ReportMetric(float64(run.maxAtOnce), "max-per-endpoint")
		})
	}
	printCurve(runs, cfg)
}

// favourTheRest puts everything but the replicas (this process: receiver and load; and what
// it starts from now on: kube-apiserver, etcd, PostgreSQL) in a group with no budget and a
// weight of shares, so that BENCH_SCALE_SHARES weighs them as it weighs the replicas against
// the machine's other load. Without it each of them weighs as any process (1024); a group
// of them at the default would weigh as one process.
func favourTheRest(b *testing.B, shares int64) {
	rest, err := benchkit.NewCPUCgroup(fmt.Sprintf("switchboard-bench-%d", os.Getpid()), 0, shares)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		// After the environment has stopped (cleanups run last first).
		if err := rest.Leave(os.Getpid()); err != nil {
			b.Error(err)
		}
		removeCgroup(b, rest)
	})
	if err := rest.Add(os.Getpid()); err != nil {
		b.Fatal(err)
	}
}

// scaling is what every fleet size shares: the environment, the account and its endpoints.
type scaling struct {
	cfg      config
	env      *servetest.Env
	bin      string
	bound    int
	ownerKey string
	number   string
	inboxes  []*servetest.Inbox // made with the first fleet, kept for the next
}

func (s *scaling) measure(b *testing.B, n int) fleetRun {
	run := fleetRun{replicas: n}
	replicas := make([]*servetest.Replica, n)
	groups := make([]*benchkit.CPUCgroup, n)
	for i := range n {
		name := fmt.Sprintf("serve-%d", i+1)
		cg, err := benchkit.NewCPUCgroup(fmt.Sprintf("switchboard-bench-%d-%d-%s", os.Getpid(), n, name), s.cfg.cores, s.cfg.shares)
		if err != nil {
			b.Fatal(err)
		}
		// Registered before the replica's own cleanup, so it runs after the replica has exited.
		b.Cleanup(func() { removeCgroup(b, cg) })
		// Each fleet size has a Lease of its own, so its first replica leads at once.
		r := s.env.StartReplica(b, s.bin, name, fmt.Sprintf("bench-scale-%d", n))
		// Started unconstrained (start-up is not measured), held to the budget from here on.
		if err := cg.Add(r.Pid()); err != nil {
			b.Fatal(err)
		}
		benchkit.NameProc(r.Pid(), name)
		replicas[i], groups[i] = r, cg
		run.replicaNames = append(run.replicaNames, name)
	}
	for _, r := range replicas {
		// A replica joining a fleet claims only after the others have made room (fleet.Decide).
		servetest.WaitFor(b, r.Name+" to claim outbox events", 2*time.Minute, func() bool { return r.LogContains("claiming outbox events") })
	}
	if s.inboxes == nil {
		for i := range endpoints {
			_, in := s.env.CreateEndpoint(b, replicas[0], s.ownerKey, fmt.Sprintf("scale-%d", i))
			s.inboxes = append(s.inboxes, in)
		}
		s.number = servetest.LiveNumber(b, replicas[0])
	}

	// Warm up: every replica ingests and delivers a few, so connections to the receiver and
	// PostgreSQL are open and the endpoints are in every replica's cache.
	warm := s.report(b, replicas, fmt.Sprintf("warm%d", n), 8*n)
	for _, in := range s.inboxes {
		in.WaitAll(b, keys(warm), 2*time.Minute)
		in.MaxInFlight(true)
	}

	throttledBefore := make([]benchkit.Throttling, n)
	for i, cg := range groups {
		throttledBefore[i], _ = cg.Throttling()
	}
	run.loadBefore = loadavg()
	statements, err := s.env.PG.ResetStatements(context.Background(), "switchboard")
	if err != nil {
		b.Fatal(err)
	}
	var waits *pgcluster.WaitSampler
	if statements {
		if waits, err = s.env.PG.SampleWaits(context.Background(), "switchboard", 20*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	busyBefore := machineTicks()
	cpuBefore := benchkit.ProcCPU()
	sampledFrom := time.Now()
	reported := s.report(b, replicas, fmt.Sprintf("scale%d", n), s.cfg.reports)
	var first, ingested time.Time
	for _, at := range reported {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	ingested = time.Now()
	calls := keys(reported)
	timeout := 2*time.Minute + time.Duration(s.cfg.reports)*50*time.Millisecond
	var tallies []servetest.Tally
	for _, in := range s.inboxes {
		tallies = append(tallies, in.WaitAll(b, calls, timeout))
	}
	cpuAfter := benchkit.ProcCPU()
	busyAfter := machineTicks()
	run.sampled = time.Since(sampledFrom)
	if waits != nil {
		printWaits(waits.Stop())
	}
	run.end = loadavg()

	// Latency and throughput from what the receiver saw for this burst (first delivery of each
	// event and endpoint).
	var lat []time.Duration
	var at []time.Time
	for _, in := range s.inboxes {
		seen := map[string]bool{}
		for _, d := range in.Deliveries() {
			start, ours := reported[d.CallID]
			if !ours || seen[d.EventID] {
				continue
			}
			seen[d.EventID] = true
			lat = append(lat, d.At.Sub(start))
			at = append(at, d.At)
		}
		run.maxAtOnce = max(run.maxAtOnce, in.MaxInFlight(true))
	}
	slices.Sort(lat)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	run.deliveries = len(at)
	if run.deliveries != endpoints*len(calls) {
		b.Fatalf("%d deliveries for %d reports to %d endpoints", run.deliveries, len(calls), endpoints)
	}
	run.wall = at[len(at)-1].Sub(first)
	run.rate = float64(run.deliveries) / run.wall.Seconds()
	lo, hi := at[len(at)/10], at[len(at)*9/10]
	run.steady = float64(len(at)*9/10-len(at)/10) / hi.Sub(lo).Seconds()
	run.reportRate = float64(len(calls)) / ingested.Sub(first).Seconds()
	run.p50, run.p99 = benchkit.Pct(lat, 0.5), benchkit.Pct(lat, 0.99)

	for _, tl := range tallies {
		if tl.BadSignatures > 0 || len(tl.CallsWithTwoEvents) > 0 {
			b.Fatalf("%d bad signatures, %d calls announced twice", tl.BadSignatures, len(tl.CallsWithTwoEvents))
		}
		run.repeats += tl.Repeats
	}
	run.perReplica, run.unknownSender = sendersOf(s.inboxes, reported, run.replicaNames)

	run.cpu = map[string]time.Duration{}
	for name, d := range cpuAfter {
		run.cpu[name] = d - cpuBefore[name]
	}
	run.machineBusy = float64(busyAfter-busyBefore) / 100 / run.sampled.Seconds()
	run.throttled = make([]float64, n)
	for i, cg := range groups {
		t, err := cg.Throttling()
		if err == nil && t.Periods > throttledBefore[i].Periods {
			run.throttled[i] = float64(t.Throttled-throttledBefore[i].Throttled) / float64(t.Periods-throttledBefore[i].Periods)
		}
	}
	if statements {
		s.printStatements(b, len(calls))
	}
	run.boundAtOnce = s.holdTheBound(b, replicas, n)
	fmt.Printf("%d replica(s): %d deliveries in %.1fs = %.0f/s (steady %.0f/s), reports answered %.0f/s; report→delivery p50 %v p99 %v; "+
		"most at once per endpoint %d, %d with slow answers (bound %d); per replica %v (unknown sender %d); repeats %d; load %s → %s\n",
		n, run.deliveries, run.wall.Seconds(), run.rate, run.steady, run.reportRate, run.p50.Round(time.Millisecond), run.p99.Round(time.Millisecond),
		run.maxAtOnce, run.boundAtOnce, s.bound, run.perReplica, run.unknownSender, run.repeats, run.loadBefore, run.end)
	fmt.Printf("  CPU over the burst: %s; whole machine busy %.2f of 2 cores\n", cpuLine(run.cpu, run.sampled), run.machineBusy)
	if most := max(run.maxAtOnce, run.boundAtOnce); most > s.bound {
		b.Fatalf("an endpoint received %d requests at once from %d replicas: above the fleet-wide bound --webhook-per-endpoint=%d",
			most, n, s.bound)
	}
	return run
}

// printStatements lists where PostgreSQL's time went in the burst (PGCLUSTER_OPTIONS with
// pg_stat_statements; docs/benchmarks.md).
func (s *scaling) printStatements(b *testing.B, reports int) {
	top, err := s.env.PG.TopStatements(context.Background(), "switchboard", 12)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("  PostgreSQL statements by total time (ms per report over %d reports | calls | rows | statement):\n", reports)
	for _, st := range top {
		fmt.Printf("    %7.3f | %6d | %7d | %s\n", st.Total.Seconds()*1000/float64(reports), st.Calls, st.Rows, st.Query)
	}
}

// printWaits lists what PostgreSQL's active sessions waited for in the burst, most first.
func printWaits(waits map[string]float64) {
	names := make([]string, 0, len(waits))
	for n := range waits {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return waits[names[i]] > waits[names[j]] })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, waits[n]))
	}
	fmt.Printf("  PostgreSQL active sessions by wait, mean over the burst: %s\n", strings.Join(parts, ", "))
}

// slowAnswer is how long the receiver holds each answer back while the bound is checked:
// long enough that the endpoints, not the replicas, are the bottleneck (the bound lets 5
// endpoints take 5 × 8 / 250 ms = 160 deliveries/s, below what the replicas ingest).
const slowAnswer = 250 * time.Millisecond

// holdTheBound reports a short burst while every endpoint answers slowly, so that the fleet
// fills every slot it has, and returns the most requests one endpoint was answering at once.
func (s *scaling) holdTheBound(b *testing.B, replicas []*servetest.Replica, n int) int {
	for _, in := range s.inboxes {
		in.MaxInFlight(true)
		in.SetDelay(slowAnswer)
	}
	defer func() {
		for _, in := range s.inboxes {
			in.SetDelay(0)
		}
	}()
	calls := keys(s.report(b, replicas, fmt.Sprintf("bound%d", n), min(150, s.cfg.reports)))
	most := 0
	for _, in := range s.inboxes {
		in.WaitAll(b, calls, 3*time.Minute)
		most = max(most, in.MaxInFlight(true))
	}
	return most
}

// report sends count call reports at once (32 clients, benchkit.Offer), spread over the
// replicas in turn, and returns each call's public id with when its report was started.
func (s *scaling) report(b *testing.B, replicas []*servetest.Replica, prefix string, count int) map[string]time.Time {
	var (
		mu       sync.Mutex
		reported = make(map[string]time.Time, count)
		errs     []error
	)
	benchkit.Offer(count, 0, func(ctx context.Context, hc *http.Client, i int) {
		r := replicas[i%len(replicas)]
		report := servetest.Report(servetest.UniqueRef(prefix, i), s.number)
		// Callers as a real burst has them, many and different: one caller for every report
		// would make each report's count rows (calls by caller) the same rows.
		report["from"] = fmt.Sprintf("+4477009%05d", i%callers)
		body, _ := json.Marshal(report)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Platform+"/platform/v1/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+servetest.PlatformToken)
		req.Header.Set("Content-Type", "application/json")
		id, err := post(hc, req)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("report to %s: %w", r.Name, err))
			return
		}
		reported[id] = start
	})
	if len(errs) > 0 {
		b.Fatalf("%d of %d reports failed, e.g. %v", len(errs), count, errs[0])
	}
	return reported
}

func post(hc *http.Client, req *http.Request) (string, error) {
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	return servetest.CallID(res.StatusCode, body)
}

// sendersOf counts the deliveries of the reported calls' events by sending replica.
func sendersOf(inboxes []*servetest.Inbox, reported map[string]time.Time, names []string) (perReplica []int, unknown int) {
	perReplica = make([]int, len(names))
	for _, in := range inboxes {
		for _, d := range in.Deliveries() {
			if _, ours := reported[d.CallID]; !ours {
				continue
			}
			if i := slices.Index(names, d.Sender); i >= 0 {
				perReplica[i]++
			} else {
				unknown++
			}
		}
	}
	return perReplica, unknown
}

func keys(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// perEndpointDefault reads serve's default --webhook-per-endpoint from its help, the bound
// the fleet must hold (the benchmark runs with the shipped defaults).
func perEndpointDefault(b *testing.B, bin string) int {
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	m := regexp.MustCompile(`--webhook-per-endpoint int[^\n]*\(default (\d+)\)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no default of --webhook-per-endpoint in `serve --help`:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// removeCgroup deletes a replica's cgroup once its last thread has left it.
func removeCgroup(b *testing.B, cg *benchkit.CPUCgroup) {
	var err error
	for range 50 {
		if err = cg.Remove(); err == nil || !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.Errorf("remove the cgroup: %v", err)
	}
}

// loadavg is the machine's 1, 5 and 15 minute load averages (uptime's).
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machineTicks is the CPU time (USER_HZ ticks) the whole machine has spent busy: every
// process, this benchmark's or another's (/proc/stat).
func machineTicks() int64 {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // guest time is already in user
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return busy
}

// cpuLine is each process's CPU over the burst, in cores, largest first.
func cpuLine(cpu map[string]time.Duration, wall time.Duration) string {
	names := make([]string, 0, len(cpu))
	for n, d := range cpu {
		if d >= 50*time.Millisecond {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return cpu[names[i]] > cpu[names[j]] })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, cpu[n].Seconds()/wall.Seconds()))
	}
	return strings.Join(parts, ", ") + " cores"
}

// printCurve prints the scaling curve and what limited it.
func printCurve(runs []fleetRun, cfg config) {
	if len(runs) == 0 {
		return
	}
	base := runs[0]
	fmt.Printf("\nScaling across replicas (%d reports × %d endpoints; each replica held to %.2f cores; cpu.shares %d):\n",
		cfg.reports, endpoints, cfg.cores, cmp.Or(cfg.shares, 1024))
	fmt.Println("| replicas | deliveries/s | steady/s | × first | p50 | p99 | most at once per endpoint (burst · slow answers) | deliveries per replica | replica budget used up (share of periods) | CPU, cores (serve each · postgres · kube-apiserver · etcd · harness) | machine busy | load before → after |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		var serve []string
		for _, n := range r.replicaNames {
			serve = append(serve, fmt.Sprintf("%.2f", r.cpu[n].Seconds()/r.sampled.Seconds()))
		}
		var thr []string
		for _, t := range r.throttled {
			thr = append(thr, fmt.Sprintf("%.0f%%", 100*t))
		}
		cores := func(name string) float64 { return r.cpu[name].Seconds() / r.sampled.Seconds() }
		fmt.Printf("| %d | %.0f | %.0f | %.2f× | %v | %v | %d · %d | %v | %s | %s · %.2f · %.2f · %.2f · %.2f | %.2f | %s → %s |\n",
			r.replicas, r.rate, r.steady, r.rate/base.rate*float64(base.replicas), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond),
			r.maxAtOnce, r.boundAtOnce, r.perReplica, strings.Join(thr, " "), strings.Join(serve, " "), cores("postgres"), cores("kube-apiserver"),
			cores("etcd"), cores(benchkit.SelfName), r.machineBusy, r.loadBefore, r.end)
	}
	last := runs[len(runs)-1]
	pgCores := last.cpu["postgres"].Seconds() / last.sampled.Seconds()
	var meanThrottled float64
	for _, t := range last.throttled {
		meanThrottled += t / float64(len(last.throttled))
	}
	fmt.Printf("At %d replicas: PostgreSQL used %.2f cores, the whole machine %.2f of 2; the replicas used up their budget in %.0f%% of periods.\n",
		last.replicas, pgCores, last.machineBusy, 100*meanThrottled)
	switch {
	case last.machineBusy > 1.8:
		fmt.Println("The machine's two cores are nearly all busy: the curve bends where the unconstrained processes (PostgreSQL first) and other load take what is left.")
	case meanThrottled > 0.5:
		fmt.Println("The replicas spend most periods at their budget: delivery is limited by the replicas' CPU, so more replicas add throughput.")
	default:
		fmt.Println("Neither the replicas' budget nor the machine is used up: something else (a lock, a round trip, the per-endpoint bound) limits it.")
	}
}
