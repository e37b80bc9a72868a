package serveprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// Knobs (environment):
//
//	BENCH_HARD_REPORTS    reports per closed-loop case (default 10000)
//	BENCH_HARD_SECONDS    length of each paced case (default 30)
//	BENCH_HARD_CLIENTS    concurrent reporters of the closed-loop cases (default "16,64")
//	BENCH_HARD_RATES      reports a second of the paced cases (default "500,1000")
//	BENCH_HARD_RECEIVER   "http1": the receiver speaks HTTP/1.1 only (default HTTP/2)
//	BENCH_HARD_PAYLOAD    "no-answer": missed calls without talk time (default answered calls)
//	BENCH_HARD_SERVE_FLAGS  extra `serve` flags, space-separated (default none: the shipped defaults)
//	BENCH_HARD_DATABASE_PARAMS  extra DATABASE_URL parameters, e.g. pool_max_conns=64
//	BENCH_HARD_PROFILE_DIR  take a 10 s CPU profile of serve in each case into this directory
//
// PGCLUSTER_OPTIONS with pg_stat_statements preloaded prints the statements of each case.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envInts(name, def string) []int {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// receiver is the integrator's HTTPS endpoint: it verifies each delivery's signature, notes
// when each call's first delivery arrived and which HTTP version carried it, and answers 200
// at once.
type receiver struct {
	srv      *httptest.Server
	verifier webhookverify.Verifier

	mu      sync.Mutex
	first   map[string]time.Time // call public id → first delivery
	events  map[string]bool      // event ids seen
	repeats int
	bad     int

	http2, http1 atomic.Int64
}

func newReceiver(http2 bool) *receiver {
	r := &receiver{first: map[string]time.Time{}, events: map[string]bool{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.EnableHTTP2 = http2
	r.srv.StartTLS()
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	if req.ProtoMajor == 2 {
		r.http2.Add(1)
	} else {
		r.http1.Add(1)
	}
	body, err := r.verifier.Request(req)
	if err != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p struct {
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	_ = json.Unmarshal(body, &p)
	event := req.Header.Get(webhookverify.HeaderDelivery)
	r.mu.Lock()
	if r.events[event] {
		r.repeats++
	} else {
		r.events[event] = true
	}
	if _, seen := r.first[p.Call.ID]; !seen {
		r.first[p.Call.ID] = at
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// deliveredOf counts the calls of sent that have been delivered.
func (r *receiver) deliveredOf(sent map[string]time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id := range sent {
		if _, ok := r.first[id]; ok {
			n++
		}
	}
	return n
}

// reporter is the telephony platform: it reports ended calls to the ingestion API.
type reporter struct {
	url, number string
	answered    bool
	hc          *http.Client
	prefix      string

	mu      sync.Mutex
	sent    map[string]time.Time // call public id → when its report was sent
	answers []time.Duration      // each report's response time
	failed  int
}

func (p *reporter) body(i int) []byte {
	report := map[string]any{"platform_ref": fmt.Sprintf("%s-%d", p.prefix, i), "to": p.number, "from": "+447700900123",
		"started_at": time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)}
	if p.answered { // a real conversation: talked, forwarded to a person, rated
		report["disposition"], report["duration_seconds"], report["talk_seconds"] = "answered", 95, 80
		report["forward_seconds"], report["rated_pence"], report["caller_name"] = 85, 4, "Jane Caller"
		report["answer"] = map[string]any{"staff_member": "Priya Shah", "department": "Sales"}
	} else {
		report["disposition"], report["duration_seconds"], report["talk_seconds"] = "no-answer", 30, 0
	}
	b, _ := json.Marshal(report)
	return b
}

func (p *reporter) report(i int) {
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(p.body(i)))
	req.Header.Set("Authorization", "Bearer "+servetest.PlatformToken)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := p.hc.Do(req)
	var id string
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id, err = servetest.CallID(resp.StatusCode, b)
	}
	took := time.Since(start)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		return
	}
	p.sent[id] = start
	p.answers = append(p.answers, took)
}

// closed reports n calls from clients reporters, each sending its next report when the
// last is answered.
func (p *reporter) closed(n, clients int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				p.report(i)
			}
		})
	}
	wg.Wait()
}

// paced reports rate calls a second for d on a fixed schedule, whether or not earlier
// reports have been answered (at most maxInFlight at once, as a platform's client pool).
func (p *reporter) paced(rate int, d time.Duration) {
	const maxInFlight = 512
	inFlight := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	n := int(d.Seconds() * float64(rate))
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		inFlight <- struct{}{}
		wg.Go(func() { defer func() { <-inFlight }(); p.report(i) })
	}
	wg.Wait()
}

type bench struct {
	b       *testing.B
	env     *servetest.Env
	serve   *servetest.Replica
	rcv     *receiver
	number  string
	prefix  string
	answer  bool
	pgStats bool
	profDir string
}

// BenchmarkOneEndpointFromParts: see the package comment. Each case reports calls, waits
// until every one is delivered, and reports deliveries/s (first report to last delivery),
// report→delivery p50/p99, and the CPU per delivery of each process.
func BenchmarkOneEndpointFromParts(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	ctrllog.SetLogger(logr.Discard())
	bin := servetest.BuildCurrent(b, b.TempDir())
	env := servetest.Start(b)
	if pid, err := env.PG.ServerPID(); err == nil {
		benchkit.CountPostmaster(pid)
	}
	benchkit.SelfName = "harness (reporters, receiver)"

	http2 := os.Getenv("BENCH_HARD_RECEIVER") != "http1"
	rcv := newReceiver(http2)
	b.Cleanup(rcv.srv.Close)
	env.CAFile = filepath.Join(env.Dir, "bench-receiver-ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.srv.Certificate().Raw})
	if err := os.WriteFile(env.CAFile, ca, 0o600); err != nil {
		b.Fatal(err)
	}
	if params := os.Getenv("BENCH_HARD_DATABASE_PARAMS"); params != "" {
		env.DBURL += "&" + params
	}
	demo := env.SeedDemo(b, bin)
	extra := strings.Fields(os.Getenv("BENCH_HARD_SERVE_FLAGS"))
	profDir := os.Getenv("BENCH_HARD_PROFILE_DIR")
	if profDir != "" {
		extra = append(extra, "--pprof")
	}
	serve := env.StartReplica(b, bin, "serve", "bench-hard", extra...)
	benchkit.NameProc(serve.Pid(), "serve")

	status, _, body := servetest.Do("POST", "http://"+serve.API+"/v1/webhooks", demo.OwnerKey, map[string]any{
		"name": "one-endpoint", "url": rcv.srv.URL + "/hook", "events": []string{"call.ended"}})
	var created struct {
		Secret string `json:"secret"`
	}
	if (status != http.StatusCreated && status != http.StatusOK) || json.Unmarshal(body, &created) != nil || created.Secret == "" {
		b.Fatalf("create the webhook endpoint: %d %s", status, body)
	}
	rcv.verifier = webhookverify.Verifier{Secret: created.Secret}

	x := &bench{b: b, env: env, serve: serve, rcv: rcv, number: servetest.LiveNumber(b, serve),
		prefix: servetest.UniqueRef("hard", 0), answer: os.Getenv("BENCH_HARD_PAYLOAD") != "no-answer",
		pgStats: strings.Contains(os.Getenv("PGCLUSTER_OPTIONS"), "pg_stat_statements"), profDir: profDir}
	if x.pgStats {
		if _, err := env.PG.Query(context.Background(), "switchboard", `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			b.Fatal(err)
		}
	}
	payload := "answered calls with talk time"
	if !x.answer {
		payload = "no-answer calls"
	}
	proto := "HTTP/2"
	if !http2 {
		proto = "HTTP/1.1"
	}
	fmt.Printf("one endpoint, serve from its parts: %s, %s receiver, serve flags %q, database params %q\n",
		payload, proto, extra, os.Getenv("BENCH_HARD_DATABASE_PARAMS"))
	x.run(b, "warm-up", func(p *reporter) { p.closed(50, 4) }, false)

	n := envInt("BENCH_HARD_REPORTS", 10000)
	for _, clients := range envInts("BENCH_HARD_CLIENTS", "16,64") {
		b.Run(fmt.Sprintf("closed-%d-reporters", clients), func(b *testing.B) {
			x.run(b, fmt.Sprintf("%d reports from %d concurrent reporters", n, clients), func(p *reporter) { p.closed(n, clients) }, true)
		})
	}
	secs := envInt("BENCH_HARD_SECONDS", 30)
	for _, rate := range envInts("BENCH_HARD_RATES", "500,1000") {
		b.Run(fmt.Sprintf("paced-%d", rate), func(b *testing.B) {
			x.run(b, fmt.Sprintf("%d reports a second for %d s", rate, secs), func(p *reporter) { p.paced(rate, time.Duration(secs)*time.Second) }, true)
		})
	}
}

var caseNo atomic.Int64

// run makes one case: load reports calls, then it waits for every delivery and reports.
func (x *bench) run(b *testing.B, how string, load func(*reporter), measure bool) {
	p := &reporter{url: "http://" + x.serve.Platform + "/platform/v1/calls", number: x.number, answered: x.answer,
		prefix: fmt.Sprintf("%s-%d", x.prefix, caseNo.Add(1)), sent: map[string]time.Time{},
		hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}}
	defer p.hc.CloseIdleConnections()
	if x.pgStats && measure {
		if _, err := x.env.PG.Query(context.Background(), "switchboard", `SELECT pg_stat_statements_reset()`); err != nil {
			b.Fatalf("pg_stat_statements: %v", err)
		}
	}
	h2Before, h1Before := x.rcv.http2.Load(), x.rcv.http1.Load()
	cpu0, t0 := benchkit.ProcCPU(), time.Now()
	profile := x.startProfile(b, measure)
	load(p)
	reportWall := time.Since(t0)
	deadline := time.Now().Add(10 * time.Minute)
	for x.rcv.deliveredOf(p.sent) < len(p.sent) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d calls not delivered within 10 minutes", len(p.sent)-x.rcv.deliveredOf(p.sent), len(p.sent))
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall := time.Since(t0)
	<-profile
	if !measure {
		return
	}
	if p.failed > 0 {
		b.Errorf("%d reports failed", p.failed)
	}
	x.rcv.mu.Lock()
	var lat []time.Duration
	var first, last time.Time
	for id, sent := range p.sent {
		at := x.rcv.first[id]
		lat = append(lat, at.Sub(sent))
		if first.IsZero() || sent.Before(first) {
			first = sent
		}
		if at.After(last) {
			last = at
		}
	}
	buckets := make([]int, int(last.Sub(first).Seconds()/5)+1)
	for id := range p.sent {
		buckets[int(x.rcv.first[id].Sub(first).Seconds()/5)]++
	}
	repeats, bad := x.rcv.repeats, x.rcv.bad
	x.rcv.mu.Unlock()
	slices.Sort(lat)
	slices.Sort(p.answers)
	secs := last.Sub(first).Seconds()
	rate := float64(len(lat)) / secs
	h2, h1 := x.rcv.http2.Load()-h2Before, x.rcv.http1.Load()-h1Before
	fmt.Printf("%s: %d deliveries in %.1fs = %.0f/s; report→delivery p50 %v, p99 %v, max %v\n", how, len(lat), secs, rate,
		benchkit.Pct(lat, 0.5).Round(time.Millisecond), benchkit.Pct(lat, 0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Printf("  reports answered %.0f/s, answer p50 %v p99 %v; received over HTTP/2 %d, HTTP/1.x %d; repeats %d, bad signatures %d\n",
		float64(len(p.answers))/reportWall.Seconds(), benchkit.Pct(p.answers, 0.5).Round(time.Millisecond),
		benchkit.Pct(p.answers, 0.99).Round(time.Millisecond), h2, h1, repeats, bad)
	fmt.Printf("  delivered per 5 s: %v\n", buckets)
	cpu, cpuMS := benchkit.CPUPerDelivery(cpu0, len(lat))
	fmt.Printf("  CPU per delivery: %s\n", cpu)
	fmt.Printf("  CPU time over %.1fs: %s\n", wall.Seconds(), benchkit.CPUSince(cpu0, wall))
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("  load average after: %s", load)
	}
	b.ReportMetric(rate, "deliveries/s")
	b.ReportMetric(float64(benchkit.Pct(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(benchkit.Pct(lat, 0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(cpuMS, "cpu-ms/delivery")
	if bad > 0 {
		b.Errorf("%d deliveries with a bad signature", bad)
	}
	if x.pgStats {
		x.printStatements(b, len(lat))
	}
}

// startProfile takes a 10 s CPU profile of serve, 2 s into the case, when
// BENCH_HARD_PROFILE_DIR is set; the channel closes when it is written.
func (x *bench) startProfile(b *testing.B, measure bool) <-chan struct{} {
	done := make(chan struct{})
	if x.profDir == "" || !measure {
		close(done)
		return done
	}
	path := filepath.Join(x.profDir, strings.ReplaceAll(b.Name(), "/", "_")+".pprof")
	go func() {
		defer close(done)
		time.Sleep(2 * time.Second)
		resp, err := http.Get("http://" + x.serve.Probes + "/debug/pprof/profile?seconds=10")
		if err != nil {
			fmt.Printf("  profile: %v\n", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			fmt.Printf("  profile: %v\n", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
		fmt.Printf("  CPU profile of serve: %s\n", path)
	}()
	return done
}

// printStatements prints the statements that took the most time in the case.
func (x *bench) printStatements(b *testing.B, deliveries int) {
	rows, err := x.env.PG.Query(context.Background(), "switchboard", `SELECT round(total_exec_time)::bigint, calls,
		left(regexp_replace(query, '\s+', ' ', 'g'), 120) FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 12`)
	if err != nil {
		b.Errorf("pg_stat_statements: %v", err)
		return
	}
	fmt.Printf("  statements by total time (ms, calls, per delivery):\n")
	for _, r := range rows {
		calls, _ := strconv.ParseFloat(r[1], 64)
		fmt.Printf("    %8s ms %8s calls %5.2f/delivery  %s\n", r[0], r[1], calls/float64(deliveries), r[2])
	}
}
