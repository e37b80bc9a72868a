package realtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"

	"github.com/switchboard-dev/switchboard/internal/apitest"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/realtime"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
)

const benchServeEnv = "SWITCHBOARD_REALTIME_BENCH_SERVE"

// benchServe runs a hub in its own process (so its memory is measured apart from the
// clients'): it prints its address and serves until stdin closes.
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
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
}

// textMarker precedes the to-do's text in a todo.created frame (its data is JSON in a string).
var textMarker = []byte(`\"text\":`)

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

// BenchmarkLiveChannel: 10,000 subscribed connections held (server memory per connection),
// 200 events/s fanned out to 1,000 subscribers of one account (publish->receive latency), and
// PostgreSQL's cost per event (the trigger's NOTIFY, and NOTIFY's ceiling).
func BenchmarkLiveChannel(b *testing.B) {
	held := envInt("SWITCHBOARD_BENCH_REALTIME_CONNS", 10000)
	fanout := envInt("SWITCHBOARD_BENCH_REALTIME_SUBSCRIBERS", 1000)
	rate := envInt("SWITCHBOARD_BENCH_REALTIME_RATE", 200)
	seconds := envInt("SWITCHBOARD_BENCH_REALTIME_SECONDS", 10)
	ctx := context.Background()
	dbURL := storetest.NewDatabaseURL(b)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	a := apitest.NewTenant(b, st, plans.Business)
	other := apitest.NewTenant(b, st, plans.Business)
	b.Logf("load average at start: %s", loadAverage())

	// The server process.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServeEnv+"="+dbURL)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if !ok {
		b.Fatalf("server: %q", line)
	}
	time.Sleep(time.Second)
	base := rssKiB(b, cmd.Process.Pid)

	signer := realtime.Signer{Key: appKey, Secret: secret}
	keyOf := func(t apitest.Tenant) int64 {
		p, err := st.Authenticate(ctx, auth.Digest(t.OwnerKey))
		if err != nil {
			b.Fatal(err)
		}
		return p.KeyID
	}
	aKey, otherKey := keyOf(a), keyOf(other)
	// connect opens and subscribes one socket (the grant written as /v1/realtime/auth writes it).
	connect := func(t apitest.Tenant, keyID int64) (*websocket.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(dctx, "ws://"+addr+"/app/"+appKey+"?protocol=7", nil)
		if err != nil {
			return nil, err
		}
		ws.SetReadLimit(1 << 20)
		var m struct {
			Event string `json:"event"`
			Data  string `json:"data"`
		}
		_, data, err := ws.Read(dctx)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		var est struct {
			SocketID string `json:"socket_id"`
		}
		_ = json.Unmarshal([]byte(m.Data), &est)
		channel := realtime.AccountChannel(t.Account.PublicID)
		if err := st.GrantRealtime(dctx, est.SocketID, channel, keyID, time.Now()); err != nil {
			return nil, err
		}
		sub, _ := json.Marshal(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": channel, "auth": signer.Sign(est.SocketID, channel)}})
		if err := ws.Write(dctx, websocket.MessageText, sub); err != nil {
			return nil, err
		}
		if _, data, err = ws.Read(dctx); err != nil {
			return nil, err
		}
		if !strings.Contains(string(data), "subscription_succeeded") {
			return nil, fmt.Errorf("subscribe: %s", data)
		}
		return ws, nil
	}
	open := func(n int, t apitest.Tenant, keyID int64) []*websocket.Conn {
		conns := make([]*websocket.Conn, n)
		var g errgroup.Group
		g.SetLimit(32)
		for i := range conns {
			g.Go(func() error {
				var err error
				conns[i], err = connect(t, keyID)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		return conns
	}

	start := time.Now()
	subscribers := open(fanout, a, aKey)
	idle := open(held-fanout, other, otherKey)
	defer func() {
		for _, c := range append(subscribers, idle...) {
			_ = c.CloseNow()
		}
	}()
	opened := time.Since(start)
	time.Sleep(2 * time.Second)
	rss := rssKiB(b, cmd.Process.Pid)
	perConn := float64(rss-base) * 1024 / float64(held)
	b.Logf("%d subscribed connections opened in %s; server RSS %d MiB -> %d MiB: %.1f KiB per connection",
		held, opened.Round(time.Millisecond), base/1024, rss/1024, perConn/1024)
	b.ReportMetric(perConn/1024, "KiB/conn")

	// Fan-out: events carry their commit-side send time in the to-do's text.
	var mu sync.Mutex
	var latencies []time.Duration
	var received atomic.Int64
	readCtx, stopReading := context.WithCancel(ctx)
	var readers sync.WaitGroup
	for _, c := range subscribers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); latencies = append(latencies, mine...); mu.Unlock() }()
			for {
				_, data, err := c.Read(readCtx)
				if err != nil {
					return
				}
				now := time.Now()
				// The send time is the to-do's text; found without decoding the JSON twice, so
				// the clients (on the same cores as the server) cost as little as they can.
				i := bytes.Index(data, textMarker)
				if i < 0 {
					continue
				}
				digits := bytes.TrimPrefix(bytes.TrimLeft(data[i+len(textMarker):], " "), []byte(`\"`))
				if j := bytes.IndexByte(digits, '\\'); j > 0 {
					digits = digits[:j]
				}
				sent, err := strconv.ParseInt(string(digits), 10, 64)
				if err != nil {
					continue
				}
				mine = append(mine, now.Sub(time.Unix(0, sent)))
				received.Add(1)
			}
		}()
	}
	total := rate * seconds
	interval := time.Second / time.Duration(rate)
	var publishers errgroup.Group
	publishers.SetLimit(8)
	next := time.Now()
	b.ResetTimer()
	for i := 0; i < total; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(interval)
		publishers.Go(func() error {
			_, err := st.Pool.Exec(ctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, $3)`,
				a.Account.ID, store.NewPublicID(store.PrefixTask), strconv.FormatInt(time.Now().UnixNano(), 10))
			return err
		})
	}
	if err := publishers.Wait(); err != nil {
		b.Fatal(err)
	}
	want := int64(total * fanout)
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	stopReading()
	readers.Wait()
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}
	b.Logf("fan-out: %d events at %d/s to %d subscribers: %d of %d deliveries; publish->receive p50 %s, p99 %s, max %s",
		total, rate, fanout, len(latencies), want, pct(0.5).Round(time.Millisecond/10), pct(0.99).Round(time.Millisecond/10),
		pct(1).Round(time.Millisecond/10))
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(latencies))/float64(want)*100, "%delivered")

	// PostgreSQL: what the trigger's NOTIFY adds to a one-row transaction, and NOTIFY's ceiling.
	// Alternating rounds with the trigger on and off, so the machine's load falls on both alike.
	insertRound := func(n int) time.Duration {
		t0 := time.Now()
		for range n {
			if _, err := st.Pool.Exec(ctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, 'x')`,
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
		if _, err := st.Pool.Exec(ctx, `ALTER TABLE tasks DISABLE TRIGGER tasks_realtime`); err != nil {
			b.Fatal(err)
		}
		without += insertRound(perRound)
		if _, err := st.Pool.Exec(ctx, `ALTER TABLE tasks ENABLE TRIGGER tasks_realtime`); err != nil {
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
					if _, err := st.Pool.Exec(cctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, $2, 'x')`,
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
	if _, err := st.Pool.Exec(ctx, `ALTER TABLE tasks DISABLE TRIGGER tasks_realtime`); err != nil {
		b.Fatal(err)
	}
	silent := ceiling()
	if _, err := st.Pool.Exec(ctx, `ALTER TABLE tasks ENABLE TRIGGER tasks_realtime`); err != nil {
		b.Fatal(err)
	}
	b.Logf("ceiling from 8 sessions: %d announced events/s (one-row transactions with the trigger), %d/s without it", notifying, silent)
	b.ReportMetric(float64(notifying), "events/s-max")
	b.Logf("load average at end: %s", loadAverage())
}
