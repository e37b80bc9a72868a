package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// The statements CallAnalytics runs read call_counts_local through its primary key and never
// touch calls when the request is in the account's own zone, and read calls through
// calls_account_started when it is not (the window counted from calls): on an account with
// 20,000 calls over 120 days among three times as many of another's, so an index dropped or a
// condition no index can serve shows here as a sequential scan or another index.
func TestCallAnalyticsReadsThroughIndexes(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	st := storetest.Open(t, url)
	now := time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC)
	seedAccount := func(name string, numbers, calls int) (store.Account, string) {
		t.Helper()
		acct, err := st.CreateAccount(ctx, store.NewAccount{Name: name, Plan: plans.Business})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		var first string
		for i := range numbers {
			num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: fmt.Sprintf("+4420794%02d%04d", acct.ID, i), Label: "Line"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, num.ID)
			if i == 0 {
				first = num.PublicID
			}
		}
		// Batches of 20,000: the count triggers run once a batch.
		o := seed.BulkOptions{Now: now, TranscribedEvery: 7, Batch: 20000, Seed: 1}
		if err := seed.BulkCalls(ctx, st, acct.ID, ids, calls, o); err != nil {
			t.Fatal(err)
		}
		return acct, first
	}
	// The account: 20,000 calls over 120 days on 3 numbers. The rest of the service: another
	// account with 60,000 over the same days on 40 numbers, so that the account's calls are a
	// small part of calls and its counts a small part of call_counts_local, as in service.
	acct, first := seedAccount("Big", 3, 20000)
	seedAccount("Other", 40, 60000)
	exec := sqlExecutor(t, st)
	exec(`UPDATE accounts SET time_zone = 'Europe/London' WHERE id = $1`, acct.ID)
	exec(`ANALYZE`)

	rec := &planRecorder{}
	explained := explainingStore(t, url, rec)
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, zone := range []*time.Location{london, newYork} {
		own := zone == london
		for _, days := range []int{7, 90} {
			for _, number := range []string{"", first} {
				name := fmt.Sprintf("account's zone, %d days, number %q", days, number)
				if !own {
					name = fmt.Sprintf("another zone, %d days, number %q", days, number)
				}
				t.Run(name, func(t *testing.T) {
					rec.take()
					q := store.AnalyticsQuery{AccountID: acct.ID, NumberPublicID: number, Days: days, Location: zone, Now: now}
					if _, err := explained.CallAnalytics(ctx, q); err != nil {
						t.Fatal(err)
					}
					statements, errs := rec.take()
					for _, e := range errs {
						t.Error(e)
					}
					var counts, calls []string
					for _, s := range statements {
						counts = s.Plan.scans("call_counts_local", counts)
						calls = s.Plan.scans("calls", calls)
					}
					if len(counts) == 0 {
						t.Errorf("call_counts_local not read by any of %d statements", len(statements))
					}
					for _, s := range counts {
						if !strings.HasSuffix(s, " call_counts_local_pkey") {
							t.Errorf("call_counts_local read by %v, want its primary key", counts)
							break
						}
					}
					switch {
					case own && len(calls) > 0:
						t.Errorf("calls read by %v in the account's own zone, want the counts alone", calls)
					case !own && len(calls) == 0:
						t.Errorf("calls not read by any of %d statements in another zone", len(statements))
					}
					for _, s := range calls {
						if !strings.HasSuffix(s, " calls_account_started") {
							t.Errorf("calls read by %v, want the index calls_account_started", calls)
							break
						}
					}
					if t.Failed() {
						for _, s := range statements {
							t.Logf("%s\n%s", s.QueryText, s.raw)
						}
					}
				})
			}
		}
	}
}

// explainedStatement is a statement's plan as auto_explain logs it in FORMAT JSON.
type explainedStatement struct {
	QueryText string   `json:"Query Text"`
	Plan      planNode `json:"Plan"`
	raw       string
}

// planRecorder keeps the plans a session's auto_explain notices carry.
type planRecorder struct {
	mu         sync.Mutex
	statements []explainedStatement
	errs       []string
}

func (r *planRecorder) notice(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// "duration: 0.123 ms  plan:\n{...}"
	var s explainedStatement
	i := strings.IndexByte(msg, '{')
	if i < 0 {
		r.errs = append(r.errs, "a notice without a plan: "+msg)
		return
	}
	if err := json.Unmarshal([]byte(msg[i:]), &s); err != nil {
		r.errs = append(r.errs, fmt.Sprintf("%v: %s", err, msg))
		return
	}
	s.raw = msg[i:]
	r.statements = append(r.statements, s)
}

// take returns the plans recorded since the last take and forgets them.
func (r *planRecorder) take() ([]explainedStatement, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, errs := r.statements, r.errs
	r.statements, r.errs = nil, nil
	return s, errs
}

// explainingStore is a store on a one-connection pool whose session logs the plan of every
// statement, those inside functions included, as a notice that rec keeps.
func explainingStore(t *testing.T, url string, rec *planRecorder) *store.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one session: statements run one after the other and their notices do not interleave
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { rec.notice(n.Message) }
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
			`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_format = json`,
			`SET auto_explain.log_level = notice`} {
			if _, err := c.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.OnPool(pool)
}
