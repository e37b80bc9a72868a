package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/apitest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
)

// The call-list benchmark of issue 3: one account with 1,000,000 calls and 100 others with
// 10,000 each, seeded with COPY, driven over loopback HTTP by concurrent clients.
// SWITCHBOARD_BENCH_CALLS scales the big account down for a quick look.

var callsBench struct {
	once    sync.Once
	err     error
	baseURL string
	key     string
	account store.Account
	st      *store.Store
	number  string
}

const benchDuration = 5 * time.Second

func setUpCallsBench(b *testing.B) {
	b.Helper()
	callsBench.once.Do(func() {
		ctx := context.Background()
		st := storetest.NewStore(b)
		callsBench.st = st
		big := 1_000_000
		if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_CALLS")); err == nil && v > 0 {
			big = v
		}
		now := time.Now().UTC()
		seedAccount := func(calls int, progress io.Writer) (apitest.Tenant, string, error) {
			tenant := apitest.NewTenant(b, st, plans.Business)
			var ids []int64
			var first string
			for i := range 3 {
				n, err := st.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID,
					E164: fmt.Sprintf("+4420794%03d%02d", tenant.Account.ID%1000, i), Label: fmt.Sprintf("Line %d", i)})
				if err != nil {
					return tenant, "", err
				}
				ids = append(ids, n.ID)
				if i == 0 {
					first = n.PublicID
				}
			}
			return tenant, first, seed.BulkCalls(ctx, st, tenant.Account.ID, ids, calls,
				seed.BulkOptions{Now: now, TranscribedEvery: 7, Progress: progress, Seed: 1})
		}
		start := time.Now()
		tenant, number, err := seedAccount(big, os.Stderr)
		if err != nil {
			callsBench.err = err
			return
		}
		for range 100 {
			if _, _, err := seedAccount(big/100, nil); err != nil {
				callsBench.err = err
				return
			}
		}
		fmt.Fprintf(os.Stderr, "    seeded %d + 100 x %d calls in %s\n", big, big/100, time.Since(start).Round(time.Second))
		srv := httptest.NewUnstartedServer(nil)
		base := "http://" + srv.Listener.Addr().String()
		// The per-user limit is raised by configuration, as an operator would for a load test.
		srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: base, Clock: clock.RealClock{}, Log: logr.Discard(),
			RequestsPerMinute: 1 << 30}, st)
		srv.Start()
		callsBench.baseURL, callsBench.key, callsBench.account, callsBench.number = base, tenant.OwnerKey, tenant.Account, number
	})
	if callsBench.err != nil {
		b.Fatal(callsBench.err)
	}
}

// load sends requests from clients goroutines for d and reports throughput and latency.
func load(b *testing.B, clients int, d time.Duration, request func(i int) *http.Request) {
	b.Helper()
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	client := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	var mu sync.Mutex
	var latencies []time.Duration
	failures := 0
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for i := c; time.Now().Before(deadline); i += clients {
				t0 := time.Now()
				resp, err := client.Do(request(i))
				if err != nil {
					bad++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != 200 {
					bad++
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			failures += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	if failures > 0 {
		b.Fatalf("%d requests failed", failures)
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/d.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func benchGet(path string) func(int) *http.Request {
	return func(int) *http.Request {
		req, _ := http.NewRequest("GET", callsBench.baseURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+callsBench.key)
		return req
	}
}

func BenchmarkCallsAPI(b *testing.B) {
	setUpCallsBench(b)
	today := time.Now().UTC()
	custom := fmt.Sprintf("/v1/calls?period=custom&date_from=%s&date_to=%s",
		today.AddDate(0, 0, -20).Format(time.DateOnly), today.AddDate(0, 0, -13).Format(time.DateOnly))
	cases := []struct{ name, path string }{
		{"list-default", "/v1/calls"},
		{"search-number", "/v1/calls?search=900123"},
		{"search-name", "/v1/calls?search=okafor"},
		{"period-custom", custom},
		{"status-sentiment", "/v1/calls?status=answered&sentiment=negative"},
		{"analytics-90d", "/v1/analytics?days=90"},
		{"analytics-90d-number", "/v1/analytics?days=90&number=" + callsBench.number},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				load(b, 8, benchDuration, benchGet(c.path))
			}
		})
	}
	// The total of a page is exact: it equals a count over the calls table.
	b.Run("total-exact", func(b *testing.B) {
		var want int
		if err := callsBench.st.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM calls WHERE account_id = $1 AND NOT filtered`, callsBench.account.ID).Scan(&want); err != nil {
			b.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(benchGet("/v1/calls?per_page=1")(0))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			Total int `json:"total"`
		}
		if err := jsonDecode(resp.Body, &page); err != nil || page.Total != want {
			b.Fatalf("total %d, want %d (%v)", page.Total, want, err)
		}
		b.ReportMetric(float64(want), "calls")
		b.ReportMetric(0, "ns/op")
	})
}

func jsonDecode(r io.Reader, dst any) error { return json.NewDecoder(r).Decode(dst) }
