package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
)

// TestAnalyticsPlans seeds SWITCHBOARD_EXPLAIN_CALLS calls (over 120 days on 3 numbers, as the
// benchmark does) and logs the plan of every statement CallAnalytics runs, through auto_explain
// (EXPLAIN ANALYZE, BUFFERS), then single-client timings. Skipped without the variable:
//
//	SWITCHBOARD_EXPLAIN_CALLS=300000 go test ./internal/store -run TestAnalyticsPlans -v -timeout 30m
func TestAnalyticsPlans(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SWITCHBOARD_EXPLAIN_CALLS"))
	if n <= 0 {
		t.Skip("SWITCHBOARD_EXPLAIN_CALLS not set")
	}
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Big", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var first string
	for i := range 3 {
		num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: fmt.Sprintf("+44207946%04d", i), Label: "Line"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, num.ID)
		if i == 0 {
			first = num.PublicID
		}
	}
	now := time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC)
	start := time.Now()
	if err := seed.BulkCalls(ctx, st, acct.ID, ids, n, seed.BulkOptions{Now: now, TranscribedEvery: 7, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d calls in %s", n, time.Since(start).Round(time.Millisecond))

	// A second pool whose sessions send every statement's plan back as a notice.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var plansOut strings.Builder
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { plansOut.WriteString(n.Message + "\n") }
	cfg.MaxConns = 1 // one session: statements run one after the other and notices do not interleave
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_analyze = on`,
			`SET auto_explain.log_buffers = on`, `SET auto_explain.log_timing = on`, `SET auto_explain.log_level = notice`} {
			if _, err := c.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	explained := store.OnPool(pool)

	// The account takes each zone in turn (a change of zone recounts the account), and a request
	// in a zone other than the account's counts from calls.
	setZone := func(zone string) {
		t0 := time.Now()
		if _, err := st.SQL().Exec(ctx, `UPDATE accounts SET time_zone = $2 WHERE id = $1`, acct.ID, zone); err != nil {
			t.Fatal(err)
		}
		t.Logf("account zone set to %s in %s", zone, time.Since(t0).Round(time.Millisecond))
	}
	zones := []string{"Europe/London", "Asia/Kolkata", "mismatch"}
	for _, zone := range zones {
		loc := accountZone(t, zone)
		if zone != "mismatch" {
			setZone(zone)
		}
		for _, num := range []string{"", first} {
			q := store.AnalyticsQuery{AccountID: acct.ID, NumberPublicID: num, Days: 90, Location: loc, Now: now}
			plansOut.Reset()
			if _, err := explained.CallAnalytics(ctx, q); err != nil {
				t.Fatal(err)
			}
			t.Logf("=== plans, %s, number=%q\n%s", zone, num, plansOut.String())
		}
	}
	// What a request's statements cost on their own, 200 times each on one connection.
	setZone("Europe/London")
	for _, probe := range []struct{ name, sql string }{
		{"round trip", `SELECT 1`},
		{"zone", `SELECT call_counts_zone(time_zone) FROM accounts WHERE id = 1`},
		{"numbers", `SELECT id, public_id, e164, label FROM numbers WHERE account_id = 1 AND status <> 'released' ORDER BY e164, id`},
		{"90 days of rows", `SELECT * FROM call_counts_local WHERE account_id = 1 AND day >= '2026-04-17' AND day <= '2026-07-15'`},
		{"90 days summed", `SELECT sum(calls), sum(answered), sum(positive) FROM call_counts_local WHERE account_id = 1 AND day >= '2026-04-17' AND day <= '2026-07-15'`},
	} {
		t0 := time.Now()
		for range 200 {
			rows, err := st.SQL().Query(ctx, probe.sql)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				_, _ = rows.Values()
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
		}
		t.Logf("%-16s %v a statement", probe.name, time.Since(t0)/200)
	}
	for _, probe := range []struct{ name, sql string }{
		{"scalars scanned", `SELECT day, number_id, calls, filtered, answered, missed, voicemail, blocked, forward_seconds, positive, neutral, negative FROM call_counts_local WHERE account_id = 1 AND day >= '2026-04-17' AND day <= '2026-07-15'`},
		{"hours scanned", `SELECT hours FROM call_counts_local WHERE account_id = 1 AND day >= '2026-04-17' AND day <= '2026-07-15'`},
		{"hours[1..24]", `SELECT ` + hoursColumns() + ` FROM call_counts_local WHERE account_id = 1 AND day >= '2026-04-17' AND day <= '2026-07-15'`},
	} {
		t0 := time.Now()
		for range 200 {
			rows, err := st.SQL().Query(ctx, probe.sql)
			if err != nil {
				t.Fatal(err)
			}
			fds := rows.FieldDescriptions()
			for rows.Next() {
				dst := make([]any, len(fds))
				for i := range dst {
					if strings.HasPrefix(probe.name, "hours s") {
						dst[i] = new([]int64)
					} else if i == 0 && probe.name == "scalars scanned" {
						dst[i] = new(time.Time)
					} else {
						dst[i] = new(int64)
					}
				}
				if err := rows.Scan(dst...); err != nil {
					t.Fatal(err)
				}
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
		}
		t.Logf("%-16s %v a statement", probe.name, time.Since(t0)/200)
	}
	for _, zone := range zones {
		loc := accountZone(t, zone)
		if zone != "mismatch" {
			setZone(zone)
		}
		for _, days := range []int{7, 90} {
			for _, num := range []string{"", first} {
				q := store.AnalyticsQuery{AccountID: acct.ID, NumberPublicID: num, Days: days, Location: loc, Now: now}
				var ds []time.Duration
				for range 20 {
					t0 := time.Now()
					if _, err := st.CallAnalytics(ctx, q); err != nil {
						t.Fatal(err)
					}
					ds = append(ds, time.Since(t0))
				}
				slices.Sort(ds)
				t.Logf("%-14s days=%d number=%-5v p50=%v max=%v", zone, days, num != "", ds[len(ds)/2], ds[len(ds)-1])
			}
		}
	}
}

// accountZone loads zone; "mismatch" is America/New_York, which the account never has here.
func accountZone(t *testing.T, zone string) *time.Location {
	if zone == "mismatch" {
		zone = "America/New_York"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func hoursColumns() string {
	var cols []string
	for h := 1; h <= 24; h++ {
		cols = append(cols, fmt.Sprintf("hours[%d]", h))
	}
	return strings.Join(cols, ", ")
}
