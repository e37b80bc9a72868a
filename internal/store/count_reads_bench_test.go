package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkCountReads compares the two ways of reading call counts, statement by statement, on
// the database SWITCHBOARD_BENCH_DATABASE_URL (seeded by apiserver's BenchmarkCallsAPI) for its
// account with the most calls: through the *_current views, and from the count tables with the
// existence check of the account's pending deltas (what ListCalls and CallAnalytics run first).
// Statements go one after another on one session, prepared where the store's are (the list's
// default total and the analytics) and planned every time where they are not. pg-cpu-us/op is
// the CPU time of that session's PostgreSQL backend (from /proc, so PostgreSQL must run on the
// same machine): far steadier than latency on a machine with other work.
func BenchmarkCountReads(b *testing.B) {
	url := os.Getenv("SWITCHBOARD_BENCH_DATABASE_URL")
	if url == "" {
		b.Skip("SWITCHBOARD_BENCH_DATABASE_URL names no seeded database")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var acct, pid int64
	var zone string
	if err := conn.QueryRow(ctx, `SELECT d.account_id, a.time_zone, pg_backend_pid() FROM call_counts_daily d
		JOIN accounts a ON a.id = d.account_id GROUP BY 1, 2 ORDER BY sum(d.calls) DESC LIMIT 1`).Scan(&acct, &zone, &pid); err != nil {
		b.Fatal(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		b.Fatal(err)
	}
	_, _, dates := AnalyticsWindow(time.Now(), loc, 90)
	analyticsArgs := []any{acct, dates[0], dates[len(dates)-1], ""}
	type read struct {
		sql  string
		args []any
	}
	count := func(f CallFilter, current bool) read {
		args := callQueryArgs{acct}
		where := callConditions(f, &args)
		q, qargs, _ := callCountSQL(acct, f, where, args, current)
		return read{q, qargs}
	}
	for _, c := range []struct {
		name            string
		prepared        bool
		views, tables   read
		filter          CallFilter
		analytics, list bool
	}{
		{name: "list-default", prepared: true, filter: CallFilter{Activity: "business"}, list: true},
		{name: "search-name", filter: CallFilter{Activity: "business", Search: "okafor"}, list: true},
		{name: "status-sentiment", filter: CallFilter{Activity: "business", Status: "answered", Sentiment: "negative"}, list: true},
		{name: "analytics-90d", prepared: true, analytics: true},
	} {
		if c.list {
			c.views, c.tables = count(c.filter, true), count(c.filter, false)
		} else {
			c.views = read{analyticsSQL(analyticsFromCurrent, "false"), analyticsArgs}
			c.tables = read{analyticsSQL(analyticsFromTable, accountPendingSQL), analyticsArgs}
		}
		for _, r := range []struct {
			name string
			read read
		}{{"views", c.views}, {"tables", c.tables}} {
			b.Run(c.name+"/"+r.name, func(b *testing.B) {
				args := r.read.args
				if !c.prepared {
					args = append([]any{pgx.QueryExecModeExec}, args...)
				}
				run := func() {
					rows, err := conn.Query(ctx, r.read.sql, args...)
					if err != nil {
						b.Fatal(err)
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						b.Fatal(err)
					}
				}
				for range 20 { // past the plan cache's first custom plans
					run()
				}
				before := backendCPU(b, pid)
				b.ResetTimer()
				for range b.N {
					run()
				}
				b.StopTimer()
				b.ReportMetric(float64((backendCPU(b, pid)-before).Microseconds())/float64(b.N), "pg-cpu-us/op")
			})
		}
	}
}

// backendCPU is the CPU time (user and system) the process pid has used, from /proc.
func backendCPU(b *testing.B, pid int64) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("PostgreSQL's backend must run on this machine: %v", err)
	}
	// The fields after the command (which may hold spaces), from the third: utime is the 14th.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	sys, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %s", pid, raw)
	}
	return time.Duration(user+sys) * time.Second / 100 // USER_HZ, 100 on Linux
}
