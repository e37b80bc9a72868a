package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// BenchmarkTranscribeCall measures POST /v1/calls/{call}/transcribe under 50 concurrent
// clients of one account (the worst case: every charge takes the same account row lock),
// each request for its own call, with every step of the real path: authentication, the rate
// limiter, the charge transaction and the TranscriptionJob's creation in a real
// kube-apiserver (envtest; an in-memory client when KUBEBUILDER_ASSETS is unset). Afterwards
// the money must be exact: one charge per call the balance could pay for, and the balance
// equal to the sum of the ledger. Reports p50/p99 latency in milliseconds.
//
//	make bench   (or: go test ./apiserver -run '^$' -bench TranscribeCall -benchtime 1x)
func BenchmarkTranscribeCall(b *testing.B) {
	const clients, perClient = 50, 20
	ctx := context.Background()
	var kube client.Client
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		kube = testenv.Client(b, testenv.ControlPlane(b))
	} else {
		b.Log("KUBEBUILDER_ASSETS is unset: jobs are created in an in-memory client")
		kube = fake.NewClientBuilder().WithScheme(serve.Scheme()).Build()
	}
	st := storetest.NewStore(b)
	qctx, stop := context.WithCancel(ctx)
	b.Cleanup(stop)
	queue := transcription.NewJobQueue(&transcription.Service{Store: st, Kube: kube, Clock: clock.RealClock{}, Log: logr.Discard()}, 10000, 4)
	go func() { _ = queue.Start(qctx) }()
	for _, bc := range []struct {
		name     string
		accounts int
		kube     client.Client
		queue    *transcription.JobQueue
	}{
		{"one account, job created before answering", 1, kube, nil},
		{"50 accounts, job created before answering", clients, kube, nil},
		{"one account, job created in the background", 1, kube, queue},
		{"one account, charge only (no job created)", 1, nil, nil},
	} {
		b.Run(bc.name, func(b *testing.B) { benchTranscribe(b, st, bc.kube, bc.queue, bc.accounts, clients, perClient) })
	}
}

// benchTranscribe runs clients × perClient requests spread over accounts accounts (client c
// uses account c % accounts); each account's balance pays for 90% of its calls.
func benchTranscribe(b *testing.B, st *store.Store, kube client.Client, queue *transcription.JobQueue, accounts, clients, perClient int) {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: clock.RealClock{},
		Log: logr.Discard(), RequestsPerMinute: 1 << 30, Kube: kube, TranscriptionJobs: queue}, st)
	srv.Start()
	b.Cleanup(srv.Close)
	api := apitest.New(srv.URL)
	api.HTTP.Transport = &http.Transport{MaxIdleConnsPerHost: clients}
	london, _ := time.LoadLocation("Europe/London")
	month, _ := billing.Periods(time.Now(), london)

	for n := 0; n < b.N; n++ {
		b.StopTimer()
		callsPerAccount := clients * perClient / accounts
		payable := callsPerAccount * 9 / 10
		tenants := make([]apitest.Tenant, accounts)
		calls := make([][]string, accounts)
		for a := range tenants {
			tenants[a] = apitest.NewTenant(b, st, plans.Business)
			acct := tenants[a].Account.ID
			txtest.Fund(b, st, acct, int64(payable)*5, store.AccountSettings{TranscriptionRatePencePerMin: ptrInt(5), DailySpendLimitPence: ptrInt64(1 << 40)})
			txtest.UseAllowance(b, st, acct, month, 300)
			num := txtest.RecordedCall(b, st, acct, txtest.CallOptions{Kind: "none"}).NumberID
			for range callsPerAccount {
				calls[a] = append(calls[a], txtest.RecordedCall(b, st, acct, txtest.CallOptions{Seconds: 30, NumberID: num}).PublicID)
			}
		}
		latencies := make([]time.Duration, 0, clients*perClient)
		statuses := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		b.StartTimer()
		start := time.Now()
		for c := range clients {
			wg.Go(func() {
				a := c % accounts
				mine := calls[a][(c/accounts)*perClient : (c/accounts+1)*perClient]
				for _, call := range mine {
					t0 := time.Now()
					resp := api.DoUnchecked(b, tenants[a].OwnerKey, "POST", "/v1/calls/"+call+"/transcribe", nil)
					d := time.Since(t0)
					mu.Lock()
					latencies, statuses[resp.Status] = append(latencies, d), statuses[resp.Status]+1
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()

		// Background jobs: wait until every charge has its job.
		jobsDone := time.Now()
		for queue != nil {
			var missing int
			if err := storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*) FROM transcription_charges WHERE job_created_at IS NULL`).Scan(&missing); err != nil {
				b.Fatal(err)
			}
			if missing == 0 {
				break
			}
			if time.Since(jobsDone) > time.Minute {
				b.Fatalf("%d jobs still not created a minute after the last answer", missing)
			}
			time.Sleep(20 * time.Millisecond)
		}
		jobsLag := time.Since(jobsDone)
		if statuses[http.StatusAccepted] != payable*accounts || statuses[http.StatusPaymentRequired] != (callsPerAccount-payable)*accounts {
			b.Fatalf("statuses %v, want %d × 202 and %d × 402", statuses, payable*accounts, (callsPerAccount-payable)*accounts)
		}
		for _, t := range tenants {
			m := txtest.MoneyOf(b, st, t.Account.ID)
			var charges, jobs int
			if err := storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*), count(job_created_at) FROM transcription_charges WHERE account_id = $1`,
				t.Account.ID).Scan(&charges, &jobs); err != nil {
				b.Fatal(err)
			}
			wantJobs := charges
			if kube == nil {
				wantJobs = 0
			}
			if m.BalancePence != 0 || m.LedgerSum != 0 || m.LedgerEntries != payable+1 || charges != payable || jobs != wantJobs {
				b.Fatalf("money not exact: %+v, %d charges, %d jobs", m, charges, jobs)
			}
		}
		slices.Sort(latencies)
		pct := func(p float64) float64 {
			return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
		lag := ""
		if queue != nil {
			lag = fmt.Sprintf("; last job created %.2f s after the last answer", jobsLag.Seconds())
		}
		fmt.Printf("%s: %d clients × %d requests: p50 %.1f ms, p99 %.1f ms, max %.1f ms, %.0f req/s; money exact%s\n",
			b.Name(), clients, perClient, pct(0.5), pct(0.99), float64(latencies[len(latencies)-1].Microseconds())/1000,
			float64(len(latencies))/elapsed.Seconds(), lag)
	}
}

func ptrInt(v int) *int       { return &v }
func ptrInt64(v int64) *int64 { return &v }
