/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestReceiverCountsEachDeliveryOnceAndSkipsProbes(t *testing.T) {
	rcv := NewReceiver()
	defer rcv.Srv.Close()
	hc := rcv.Srv.Client()
	id := uuid.New()
	post := func(path, delivery string) int {
		req, _ := http.NewRequest(http.MethodPost, rcv.Srv.URL+path, nil)
		if delivery != "" {
			req.Header.Set(DeliveryHeader, delivery)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	created := map[uuid.UUID]time.Time{id: time.Now()}
	for _, path := range []string{"/ep/0", "/ep/0", "/ep/1"} {
		if code := post(path, id.String()); code != http.StatusNoContent {
			t.Fatalf("delivery to %s: %d", path, code)
		}
	}
	if code := post("/ep/0", ""); code != http.StatusNoContent {
		t.Fatalf("probe: %d", code)
	}
	if got := rcv.Delivered(); got != 2 {
		t.Errorf("Delivered() = %d, want 2 (one per event and endpoint; probes not counted)", got)
	}
	if got := rcv.Attempts.Load(); got != 4 {
		t.Errorf("Attempts = %d, want 4", got)
	}
	lat, last := Latencies(rcv, created, "/ep/1")
	if len(lat) != 1 || lat[0] <= 0 || last.Before(created[id]) {
		t.Errorf("Latencies(/ep/1) = %v, %v", lat, last)
	}
}

func TestReceiverKeyedByTheBody(t *testing.T) {
	// A peer that sends its own id in its headers: the event's id is in the body.
	rcv := NewReceiver(KeyedBy(func(_ http.Header, body []byte) string {
		id, _ := strings.CutPrefix(string(body), "event=")
		return id
	}))
	defer rcv.Srv.Close()
	hc := rcv.Srv.Client()
	id := uuid.New()
	post := func(path, body string) {
		req, _ := http.NewRequest(http.MethodPost, rcv.Srv.URL+path, strings.NewReader(body))
		req.Header.Set(DeliveryHeader, "not-the-event") // ignored: the receiver is keyed by the body
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("delivery to %s: %d", path, res.StatusCode)
		}
	}
	post("/ep/0", "event="+id.String())
	post("/ep/0", "event="+id.String())
	post("/ep/2", "event="+id.String())
	post("/ep/1", "") // carries no id: a probe
	if got := rcv.Delivered(); got != 2 {
		t.Errorf("Delivered() = %d, want 2", got)
	}
	created := map[uuid.UUID]time.Time{id: time.Now().Add(-time.Millisecond)}
	if lat, _ := Latencies(rcv, created, "/ep/2"); len(lat) != 1 {
		t.Errorf("Latencies(/ep/2) = %v, want one delivery of the body's event", lat)
	}
}

func TestReceiverFailsAtItsRate(t *testing.T) {
	rcv := NewReceiver()
	defer rcv.Srv.Close()
	rcv.FailRate = 1
	req, _ := http.NewRequest(http.MethodPost, rcv.Srv.URL+"/ep/0", nil)
	req.Header.Set(DeliveryHeader, uuid.NewString())
	res, err := rcv.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError || rcv.Delivered() != 0 {
		t.Errorf("got %d and %d delivered, want 500 and none", res.StatusCode, rcv.Delivered())
	}
}

func TestPct(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.5, 6}, {0.99, 10}, {1, 10}} {
		if got := Pct(d, c.p); got != c.want {
			t.Errorf("Pct(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Pct(nil, 0.5) != 0 {
		t.Error("Pct of nothing is not 0")
	}
}

func TestOfferMakesEveryRequestAtTheRate(t *testing.T) {
	var n atomic.Int64
	start := time.Now()
	rate := Offer(50, 200, func(context.Context, *http.Client, int) { n.Add(1) })
	if n.Load() != 50 {
		t.Fatalf("%d requests, want 50", n.Load())
	}
	// 50 at 200/s start over 245 ms.
	if took := time.Since(start); took < 240*time.Millisecond || rate > 210 {
		t.Errorf("took %v, rate %.0f/s: faster than offered", took, rate)
	}
	n.Store(0)
	Offer(100, 0, func(context.Context, *http.Client, int) { n.Add(1) })
	if n.Load() != 100 {
		t.Errorf("burst: %d requests, want 100", n.Load())
	}
}

func TestEndToEndCasesScale(t *testing.T) {
	full := EndToEndCases(10000)
	want := []Case{{"burst-1-endpoint", 1, 5000, 0}, {"paced-200-1-endpoint", 1, 6000, 200},
		{"paced-400-1-endpoint", 1, 12000, 400}, {"fan-out-5-endpoints", 5, 1000, 0}}
	for i := range want {
		if full[i] != want[i] {
			t.Errorf("case %d = %+v, want %+v", i, full[i], want[i])
		}
	}
	if small := EndToEndCases(2000); small[0].N != 2000 || small[1].N != 1200 || small[2].N != 2400 || small[3].N != 1000 {
		t.Errorf("BENCH_EVENTS=2000: %+v", small)
	}
}

func TestProcCPUNamesThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	deadline := time.Now().Add(5 * time.Second)
	for ProcCPU()[SelfName] == 0 && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ { // spend a tick of CPU
			_ = i * i
		}
	}
	if ProcCPU()[SelfName] == 0 {
		t.Error("no CPU time counted for this process")
	}
}

// startScriptWithChild starts a shell script that runs one child and waits for it, named name
// (NameProc), and returns once the child runs.
func startScriptWithChild(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	NameProc(cmd.Process.Pid, name)
	children := fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(children); len(strings.Fields(string(b))) > 0 {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("the script started no child")
		}
	}
}

func TestProcCPUCountsANamedProcessChildrenAsIt(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// A start script and the server it runs, as rabbitmq-server runs beam.smp.
	startScriptWithChild(t, "broker")
	got := map[string]int{}
	eachProc(func(_ int, name string, _ int64) { got[name]++ })
	if got["broker"] != 2 || got["sleep"] != 0 || got["sh"] != 0 {
		t.Errorf("processes by name: %v, want the script and its child as broker", got)
	}
}

// RSS sums a name's processes: a named script and its child count as one name, with more
// resident memory than either alone.
func TestRSSSumsANamesProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	cmd := startScriptWithChild(t, "pair")
	script := vmRSS(t, cmd.Process.Pid)
	rss := RSS()
	if rss[SelfName] <= 0 {
		t.Errorf("RSS()[%q] = %d, want this process's resident memory", SelfName, rss[SelfName])
	}
	if rss["pair"] <= script {
		t.Errorf(`RSS()["pair"] = %d, want more than the script's own %d (its child counted too)`, rss["pair"], script)
	}
}

func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			var kb int64
			if _, err := fmt.Sscan(f[1], &kb); err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
