package apiserver_test

import (
	"bytes"
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
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// The call-list benchmark of issue 3: one account with 1,000,000 calls and 100 others with
// 10,000 each, seeded with COPY, driven over loopback HTTP by concurrent clients.
// SWITCHBOARD_BENCH_CALLS scales the big account down for a quick look.
// SWITCHBOARD_BENCH_DATABASE_URL names a database to use instead of a throwaway cluster: it is
// migrated and seeded on the first run and reused as it is on later ones (seeding 1M calls
// takes minutes), with a fresh key for the owner of the account with the most calls.

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
		var st *store.Store
		reused := false
		if url := os.Getenv("SWITCHBOARD_BENCH_DATABASE_URL"); url != "" {
			if st, reused, callsBench.err = openBenchDatabase(ctx, b, url); callsBench.err != nil {
				return
			}
		} else {
			st = storetest.NewStore(b)
		}
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
		var tenant apitest.Tenant
		var number string
		if reused {
			var err error
			if tenant, number, err = reuseBenchAccount(ctx, b, st); err != nil {
				callsBench.err = err
				return
			}
		} else {
			start := time.Now()
			var err error
			tenant, number, err = seedAccount(big, os.Stderr)
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
			// A directory of 2,000 contacts naming some of the big account's callers, as a CRM
			// sync would leave it: the list names callers from it and name searches consult it.
			for batch := range 4 {
				ins := make([]store.ContactInput, 500)
				for j := range ins {
					n := batch*500 + j
					ins[j] = store.ContactInput{Source: "crm", DisplayName: fmt.Sprintf("Customer %d", n),
						Phones: []store.ContactPhoneInput{{Number: fmt.Sprintf("+4477009%05d", n*37%100_000)}}}
				}
				if _, err := st.BulkUpsertContacts(ctx, tenant.Account.ID, ins, now, nil); err != nil {
					callsBench.err = err
					return
				}
			}
			// As autovacuum would after a bulk load: planner statistics and the visibility map.
			if _, err := storetest.SQL(b, st).Exec(ctx, `VACUUM ANALYZE`); err != nil {
				callsBench.err = err
				return
			}
			fmt.Fprintf(os.Stderr, "    seeded %d + 100 x %d calls and 2,000 contacts in %s\n", big, big/100, time.Since(start).Round(time.Second))
		}
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

// openBenchDatabase migrates the database at url and reports whether it holds calls already.
func openBenchDatabase(ctx context.Context, b *testing.B, url string) (*store.Store, bool, error) {
	if _, err := store.Migrate(ctx, url); err != nil {
		return nil, false, err
	}
	st := storetest.Open(b, url)
	var seeded bool
	err := storetest.SQL(b, st).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM calls)`).Scan(&seeded)
	return st, seeded, err
}

// reuseBenchAccount picks the account with the most calls in a seeded database, with a new
// key for its owner and its first number.
func reuseBenchAccount(ctx context.Context, b *testing.B, st *store.Store) (apitest.Tenant, string, error) {
	var t apitest.Tenant
	var accountPublicID string
	var number string
	err := storetest.SQL(b, st).QueryRow(ctx, `SELECT a.public_id, u.id, n.public_id FROM accounts a
		JOIN users u ON u.account_id = a.id AND u.role = 'owner'
		JOIN numbers n ON n.account_id = a.id
		ORDER BY (SELECT sum(calls) FROM call_counts_daily d WHERE d.account_id = a.id) DESC NULLS LAST, u.id, n.id LIMIT 1`).
		Scan(&accountPublicID, &t.Owner.ID, &number)
	if err != nil {
		return t, "", err
	}
	if t.Account, err = st.GetAccountByPublicID(ctx, accountPublicID); err != nil {
		return t, "", err
	}
	t.OwnerKey = apitest.NewKey(b, st, t.Owner.ID, auth.Abilities(auth.AllAbilities).Strings()...)
	return t, number, nil
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
				if resp.StatusCode/100 != 2 {
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
	b.ReportMetric(pct(1), "max-ms")
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
	// Two CRM syncs at once, each sending batches of 500 contacts with two phones; every
	// other batch repeats the external ids of an earlier one, so half the contacts are updates.
	b.Run("contacts-bulk-upsert-500", func(b *testing.B) {
		for range b.N {
			load(b, 2, benchDuration, func(i int) *http.Request {
				contacts := make([]map[string]any, 500)
				batch := i / 4 // each client sends every batch of ids twice: i/2 is its own count
				for j := range contacts {
					n := batch*500 + j
					contacts[j] = map[string]any{
						"external_id": fmt.Sprintf("crm-%d-%d", i%2, n), "display_name": fmt.Sprintf("Contact %d", n),
						"company": "Bench Ltd", "email": fmt.Sprintf("c%d@example.com", n),
						"phones": []map[string]any{{"number": fmt.Sprintf("07700 9%05d", n%100_000), "label": "mobile"},
							{"number": fmt.Sprintf("020 7946 %04d", n%10_000), "label": "work"}},
					}
				}
				body, _ := json.Marshal(map[string]any{"source": fmt.Sprintf("crm-%d", i%2), "contacts": contacts})
				req, _ := http.NewRequest("POST", callsBench.baseURL+"/v1/contacts/bulk-upsert", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+callsBench.key)
				req.Header.Set("Content-Type", "application/json")
				return req
			})
		}
	})
	// The total of a page is exact: it equals a count over the calls table.
	b.Run("total-exact", func(b *testing.B) {
		var want int
		if err := storetest.SQL(b, callsBench.st).QueryRow(context.Background(),
			`SELECT count(*) FROM calls WHERE account_id = $1 AND NOT filtered`, callsBench.account.ID).Scan(&want); err != nil {
			b.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(benchGet("/v1/calls?per_page=1")(0))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var got page[map[string]any]
		if err := jsonDecode(resp.Body, &got); err != nil || got.Total != want {
			b.Fatalf("total %d, want %d (%v)", got.Total, want, err)
		}
		b.ReportMetric(float64(want), "calls")
		b.ReportMetric(0, "ns/op")
	})
}

func jsonDecode(r io.Reader, dst any) error { return json.NewDecoder(r).Decode(dst) }
