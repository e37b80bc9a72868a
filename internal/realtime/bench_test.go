package realtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"golang.org/x/sync/errgroup"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/realtime"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

const (
	benchServeEnv   = "SWITCHBOARD_REALTIME_BENCH_SERVE"
	benchClientsEnv = "SWITCHBOARD_REALTIME_BENCH_CLIENTS"
	// benchProfileEnv names a file for the hub's CPU profile over the fan-out.
	benchProfileEnv = "SWITCHBOARD_BENCH_REALTIME_CPUPROFILE"
)

// benchServe runs a hub in its own process (so its memory and CPU are measured apart from
// the clients' and the publisher's): it prints its address and serves until stdin closes; the
// lines "profile" and "stop-profile" on stdin bound a CPU profile (benchProfileEnv), and
// "memstats" prints where its memory is (MEMSTATS, bytes).
func benchServe() {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, os.Getenv(benchServeEnv))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	hub := realtime.NewHub(realtime.Config{Signer: realtime.Signer{Key: appKey, Secret: secret}, Store: st,
		DatabaseURL: os.Getenv(benchServeEnv), Log: logr.Discard(),
		Limits: realtime.Limits{ConnectionsPerAccount: 100000, SubscriptionsPerMinute: 100, SendBuffer: 4096}})
	go func() { _ = hub.Start(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	go func() { _ = http.Serve(ln, hub) }()
	fmt.Println("ADDR", ln.Addr().String())
	lines := bufio.NewScanner(os.Stdin)
	var profile *os.File
	for lines.Scan() {
		switch path := os.Getenv(benchProfileEnv); {
		case lines.Text() == "memstats":
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Printf("MEMSTATS %d %d %d %d\n", runtime.NumGoroutine(), m.HeapInuse, m.StackInuse, m.Sys)
		case path == "":
		case lines.Text() == "profile":
			if profile, err = os.Create(path); err == nil {
				_ = pprof.StartCPUProfile(profile)
			}
		case lines.Text() == "stop-profile" && profile != nil:
			pprof.StopCPUProfile()
			_ = profile.Close()
		}
	}
	cancel()
}

// clientGroup is a set of sockets the client process opens on one account's channel.
type clientGroup struct {
	Channel string `json:"channel"`
	KeyID   int64  `json:"key_id"`
	N       int    `json:"n"`
	// Measure: read every frame and time the events; otherwise the sockets stay idle.
	Measure bool `json:"measure"`
}

type clientsConfig struct {
	Addr   string        `json:"addr"`
	DB     string        `json:"db"`
	Expect int64         `json:"expect"` // deliveries to wait for
	Groups []clientGroup `json:"groups"`
}

type clientsResult struct {
	Received int64 `json:"received"`
	P50      int64 `json:"p50_ns"`
	P99      int64 `json:"p99_ns"`
	Max      int64 `json:"max_ns"`
}

// textMarker precedes the to-do's text in a todo.created frame (its data is JSON in a string).
var textMarker = []byte(`\"text\":`)

// sendTime takes the publisher's send time out of a todo.created message, without decoding
// its JSON twice, so the clients cost as little as they can on the server's cores.
func sendTime(msg []byte) (time.Time, bool) {
	if !bytes.HasPrefix(msg, []byte(`{"event":"todo.created"`)) {
		return time.Time{}, false
	}
	i := bytes.Index(msg, textMarker)
	if i < 0 {
		return time.Time{}, false
	}
	digits := bytes.TrimPrefix(bytes.TrimLeft(msg[i+len(textMarker):], " "), []byte(`\"`))
	if j := bytes.IndexByte(digits, '\\'); j > 0 {
		digits = digits[:j]
	}
	sent, err := strconv.ParseInt(string(digits), 10, 64)
	return time.Unix(0, sent), err == nil
}

// readMessage reads the next data frame's payload into buf (grown as needed), skipping
// control frames.
func readMessage(r io.Reader, buf []byte) ([]byte, error) {
	for {
		h, err := ws.ReadHeader(r)
		if err != nil {
			return buf, err
		}
		if int64(cap(buf)) < h.Length {
			buf = make([]byte, h.Length)
		}
		buf = buf[:h.Length]
		if _, err := io.ReadFull(r, buf); err != nil {
			return buf, err
		}
		switch {
		case h.OpCode == ws.OpClose:
			return buf, io.EOF
		case h.OpCode.IsData() && h.Fin:
			return buf, nil
		case !h.OpCode.IsControl():
			return buf, errors.New("fragmented message: the hub does not fragment")
		}
	}
}

// benchClients runs the benchmark's clients in their own process (gobwas/ws's low-level
// reader, one goroutine per measured socket): it opens and subscribes the sockets, prints
// READY, times every event until it has the deliveries expected or a line arrives on stdin,
// then prints RESULT with the latencies' percentiles.
func benchClients() {
	fail := func(err error) {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	var cfg clientsConfig
	if err := json.Unmarshal([]byte(os.Getenv(benchClientsEnv)), &cfg); err != nil {
		fail(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		fail(err)
	}
	signer := realtime.Signer{Key: appKey, Secret: secret}
	type socket struct {
		nc net.Conn
		r  *bufio.Reader
	}
	// connect opens and subscribes one socket (the grant written as /v1/realtime/auth writes it).
	connect := func(g clientGroup) (socket, error) {
		dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		nc, br, _, err := ws.Dialer{}.Dial(dctx, "ws://"+cfg.Addr+"/app/"+appKey+"?protocol=7")
		if err != nil {
			return socket{}, err
		}
		src := io.Reader(nc)
		if br != nil {
			src = io.MultiReader(br, nc)
		}
		size := 256
		if g.Measure {
			size = 64 << 10
		}
		s := socket{nc: nc, r: bufio.NewReaderSize(src, size)}
		_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
		defer func() { _ = nc.SetDeadline(time.Time{}) }()
		data, err := readMessage(s.r, nil)
		if err != nil {
			return s, err
		}
		var m struct {
			Data string `json:"data"`
		}
		var est struct {
			SocketID string `json:"socket_id"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return s, err
		}
		_ = json.Unmarshal([]byte(m.Data), &est)
		if err := st.GrantRealtime(dctx, est.SocketID, g.Channel, g.KeyID, time.Now()); err != nil {
			return s, err
		}
		sub, _ := json.Marshal(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": g.Channel, "auth": signer.Sign(est.SocketID, g.Channel)}})
		if err := wsutil.WriteClientText(nc, sub); err != nil {
			return s, err
		}
		if data, err = readMessage(s.r, data); err != nil {
			return s, err
		}
		if !bytes.Contains(data, []byte("subscription_succeeded")) {
			return s, fmt.Errorf("subscribe: %s", data)
		}
		return s, nil
	}
	start := time.Now()
	var measured, all []socket
	for _, g := range cfg.Groups {
		socks := make([]socket, g.N)
		var eg errgroup.Group
		eg.SetLimit(32)
		for i := range socks {
			eg.Go(func() error {
				var err error
				socks[i], err = connect(g)
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			fail(err)
		}
		all = append(all, socks...)
		if g.Measure {
			measured = append(measured, socks...)
		}
	}
	st.Close()
	fmt.Println("READY", time.Since(start).Nanoseconds())

	var mu sync.Mutex
	var latencies []time.Duration
	var received atomic.Int64
	done := make(chan struct{})
	var doneOnce sync.Once
	var readers sync.WaitGroup
	for _, s := range measured {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); latencies = append(latencies, mine...); mu.Unlock() }()
			buf := make([]byte, 0, 4096)
			for {
				var err error
				if buf, err = readMessage(s.r, buf); err != nil {
					return
				}
				sent, ok := sendTime(buf)
				if !ok {
					continue
				}
				mine = append(mine, time.Since(sent))
				if received.Add(1) == cfg.Expect {
					doneOnce.Do(func() { close(done) })
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString('\n'); close(stop) }()
	select {
	case <-done:
	case <-stop:
	}
	for _, s := range all {
		_ = s.nc.Close()
	}
	readers.Wait()
	slices.Sort(latencies)
	pct := func(p float64) int64 {
		if len(latencies) == 0 {
			return 0
		}
		return int64(latencies[min(len(latencies)-1, int(float64(len(latencies))*p))])
	}
	out, _ := json.Marshal(clientsResult{Received: int64(len(latencies)), P50: pct(0.5), P99: pct(0.99), Max: pct(1)})
	fmt.Println("RESULT", string(out))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func rssKiB(b *testing.B, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// procStat is a process's parent and CPU time (user + system) from /proc/<pid>/stat.
func procStat(pid int) (ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces; the fields after it are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return ppid, time.Duration(utime+stime) * time.Second / ticksPerSecond, true
}

func cpuOf(pid int) time.Duration {
	_, cpu, _ := procStat(pid)
	return cpu
}

// clusterCPU is the CPU time of a PostgreSQL cluster: its postmaster and every child
// (backends, WAL writer, ...), found from the postmaster.pid in its data directory.
func clusterCPU(b *testing.B, st *store.Store) time.Duration {
	b.Helper()
	var dir string
	if err := storetest.SQL(b, st).QueryRow(context.Background(), `SHOW data_directory`).Scan(&dir); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(strings.SplitN(string(data), "\n", 2)[0])
	total := cpuOf(postmaster)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, cpu, ok := procStat(pid); ok && ppid == postmaster {
			total += cpu
		}
	}
	return total
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// startProcess re-executes the test binary with env (benchServe or benchClients) and returns
// it with its stdin and its stdout's lines.
func startProcess(b *testing.B, env string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	return cmd, stdin, lines
}

// nextLine is the process's next output line, which must start with prefix.
func nextLine(b *testing.B, lines *bufio.Scanner, prefix string) string {
	b.Helper()
	if !lines.Scan() {
		b.Fatalf("the process ended without %s: %v", prefix, lines.Err())
	}
	rest, ok := strings.CutPrefix(lines.Text(), prefix+" ")
	if !ok {
		b.Fatalf("want %s, got %q", prefix, lines.Text())
	}
	return rest
}

// BenchmarkLiveChannel: 10,000 subscribed connections held (server memory per connection),
// 200 events/s fanned out to 1,000 subscribers of one account (publish->receive latency, and
// the CPU each process spends per event), and PostgreSQL's cost per event (the trigger's
// NOTIFY, and NOTIFY's ceiling). The hub and the clients run in processes of their own.
func BenchmarkLiveChannel(b *testing.B) {
	held := envInt("SWITCHBOARD_BENCH_REALTIME_CONNS", 10000)
	fanout := envInt("SWITCHBOARD_BENCH_REALTIME_SUBSCRIBERS", 1000)
	rate := envInt("SWITCHBOARD_BENCH_REALTIME_RATE", 200)
	seconds := envInt("SWITCHBOARD_BENCH_REALTIME_SECONDS", 10)
	ctx := context.Background()
	dbURL := storetest.NewDatabaseURL(b)
	st := storetest.Open(b, dbURL)
	a := apitest.NewTenant(b, st, plans.Business)
	other := apitest.NewTenant(b, st, plans.Business)
	b.Logf("load average at start: %s", loadAverage())

	hub, hubIn, hubOut := startProcess(b, benchServeEnv+"="+dbURL)
	addr := nextLine(b, hubOut, "ADDR")
	time.Sleep(time.Second)
	base := rssKiB(b, hub.Process.Pid)

	keyOf := func(t apitest.Tenant) int64 {
		p, _, err := st.AuthenticateAndCount(ctx, auth.Digest(t.OwnerKey), time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return p.KeyID
	}
	total := rate * seconds
	cfg, _ := json.Marshal(clientsConfig{Addr: addr, DB: dbURL, Expect: int64(total * fanout), Groups: []clientGroup{
		{Channel: realtime.AccountChannel(a.Account.PublicID), KeyID: keyOf(a), N: fanout, Measure: true},
		{Channel: realtime.AccountChannel(other.Account.PublicID), KeyID: keyOf(other), N: held - fanout},
	}})
	clients, clientsIn, clientsOut := startProcess(b, benchClientsEnv+"="+string(cfg))
	openedNs, _ := strconv.ParseInt(nextLine(b, clientsOut, "READY"), 10, 64)
	time.Sleep(2 * time.Second)
	rss := rssKiB(b, hub.Process.Pid)
	perConn := float64(rss-base) * 1024 / float64(held)
	b.Logf("%d subscribed connections opened in %s; hub RSS %d MiB -> %d MiB: %.1f KiB per connection",
		held, time.Duration(openedNs).Round(time.Millisecond), base/1024, rss/1024, perConn/1024)
	b.ReportMetric(perConn/1024, "KiB/conn")
	_, _ = io.WriteString(hubIn, "memstats\n")
	var goroutines, heap, stacks, sys int64
	if _, err := fmt.Sscan(nextLine(b, hubOut, "MEMSTATS"), &goroutines, &heap, &stacks, &sys); err != nil {
		b.Fatal(err)
	}
	b.Logf("hub after a GC: %d goroutines, heap in use %d MiB, stacks %d MiB, from the OS %d MiB",
		goroutines, heap>>20, stacks>>20, sys>>20)

	// Fan-out: events carry their commit-side send time in the to-do's text.
	_, _ = io.WriteString(hubIn, "profile\n")
	hubCPU, clientsCPU, publisherCPU, pgCPU := cpuOf(hub.Process.Pid), cpuOf(clients.Process.Pid), cpuOf(os.Getpid()), clusterCPU(b, st)
	began := time.Now()
	interval := time.Second / time.Duration(rate)
	var publishers errgroup.Group
	publishers.SetLimit(8)
	next := time.Now()
	b.ResetTimer()
	for i := 0; i < total; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(interval)
		publishers.Go(func() error {
			_, err := storetest.SQL(b, st).Exec(ctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, $3)`,
				a.Account.ID, store.NewPublicID(store.PrefixTask), strconv.FormatInt(time.Now().UnixNano(), 10))
			return err
		})
	}
	if err := publishers.Wait(); err != nil {
		b.Fatal(err)
	}
	publisherCPU = cpuOf(os.Getpid()) - publisherCPU
	// The clients answer once they have every delivery; after 30 s they are told to stop.
	results := make(chan string, 1)
	go func() { results <- nextLine(b, clientsOut, "RESULT") }()
	var line string
	select {
	case line = <-results:
	case <-time.After(30 * time.Second):
		_, _ = io.WriteString(clientsIn, "stop\n")
		line = <-results
	}
	b.StopTimer()
	elapsed := time.Since(began)
	hubCPU, clientsCPU, pgCPU = cpuOf(hub.Process.Pid)-hubCPU, cpuOf(clients.Process.Pid)-clientsCPU, clusterCPU(b, st)-pgCPU
	_, _ = io.WriteString(hubIn, "stop-profile\n")
	var res clientsResult
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		b.Fatal(err)
	}
	want := int64(total * fanout)
	ms := func(ns int64) string { return time.Duration(ns).Round(time.Millisecond / 10).String() }
	b.Logf("fan-out: %d events at %d/s to %d subscribers: %d of %d deliveries; publish->receive p50 %s, p99 %s, max %s",
		total, rate, fanout, res.Received, want, ms(res.P50), ms(res.P99), ms(res.Max))
	perEvent := func(cpu time.Duration) string {
		return fmt.Sprintf("%s (%.0f%% of a core)", (cpu / time.Duration(total)).Round(time.Microsecond), 100*cpu.Seconds()/elapsed.Seconds())
	}
	b.Logf("CPU per event over %s: hub %s, clients %s, PostgreSQL %s, publisher %s", elapsed.Round(time.Millisecond),
		perEvent(hubCPU), perEvent(clientsCPU), perEvent(pgCPU), perEvent(publisherCPU))
	b.ReportMetric(float64(res.P99)/1e6, "p99-ms")
	b.ReportMetric(float64(res.Received)/float64(want)*100, "%delivered")
	b.ReportMetric(float64(hubCPU.Microseconds())/float64(total), "hub-cpu-µs/event")
	b.ReportMetric(float64(pgCPU.Microseconds())/float64(total), "pg-cpu-µs/event")

	// PostgreSQL: what the trigger's NOTIFY adds to a one-row transaction, and NOTIFY's ceiling.
	// Alternating rounds with the trigger on and off, so the machine's load falls on both alike.
	insertRound := func(n int) time.Duration {
		t0 := time.Now()
		for range n {
			if _, err := storetest.SQL(b, st).Exec(ctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, 'x')`,
				other.Account.ID, store.NewPublicID(store.PrefixTask)); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	var with, without time.Duration
	const rounds, perRound = 6, 300
	for range rounds {
		with += insertRound(perRound)
		if _, err := storetest.SQL(b, st).Exec(ctx, `ALTER TABLE tasks DISABLE TRIGGER tasks_realtime`); err != nil {
			b.Fatal(err)
		}
		without += insertRound(perRound)
		if _, err := storetest.SQL(b, st).Exec(ctx, `ALTER TABLE tasks ENABLE TRIGGER tasks_realtime`); err != nil {
			b.Fatal(err)
		}
	}
	with, without = with/(rounds*perRound), without/(rounds*perRound)
	b.Logf("one-row INSERT INTO tasks: %s with the NOTIFY trigger, %s without", with.Round(time.Microsecond), without.Round(time.Microsecond))
	b.ReportMetric(float64((with - without).Microseconds()), "notify-µs/event")

	// The ceiling: one-row transactions from 8 sessions for 5 s, trigger on, then off.
	ceiling := func() int64 {
		var n atomic.Int64
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var g errgroup.Group
		for range 8 {
			g.Go(func() error {
				for cctx.Err() == nil {
					if _, err := storetest.SQL(b, st).Exec(cctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, 'x')`,
						other.Account.ID, store.NewPublicID(store.PrefixTask)); err == nil {
						n.Add(1)
					}
				}
				return nil
			})
		}
		_ = g.Wait()
		return n.Load() / 5
	}
	notifying := ceiling()
	if _, err := storetest.SQL(b, st).Exec(ctx, `ALTER TABLE tasks DISABLE TRIGGER tasks_realtime`); err != nil {
		b.Fatal(err)
	}
	silent := ceiling()
	if _, err := storetest.SQL(b, st).Exec(ctx, `ALTER TABLE tasks ENABLE TRIGGER tasks_realtime`); err != nil {
		b.Fatal(err)
	}
	b.Logf("ceiling from 8 sessions: %d announced events/s (one-row transactions with the trigger), %d/s without it", notifying, silent)
	b.ReportMetric(float64(notifying), "events/s-max")
	b.Logf("load average at end: %s", loadAverage())
}
