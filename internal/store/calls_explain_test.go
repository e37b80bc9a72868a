package store

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestCallsQueryPlans prints plans and timings against a large database named by
// CALLS_EXPLAIN_DB (a migrated database holding many calls); it is skipped otherwise.
func TestCallsQueryPlans(t *testing.T) {
	url := os.Getenv("CALLS_EXPLAIN_DB")
	if url == "" {
		t.Skip("CALLS_EXPLAIN_DB not set")
	}
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	weekAgo := now.AddDate(0, 0, -7)
	filters := map[string]CallFilter{
		"default":       {},
		"all":           {Activity: "all"},
		"filtered":      {Activity: "filtered"},
		"page40":        {Offset: 1000},
		"7d":            {From: &weekAgo},
		"status":        {Status: "voicemail"},
		"status-7d":     {Status: "busy", From: &weekAgo},
		"sentiment":     {Sentiment: "negative"},
		"urgency-7d":    {Urgency: "high", From: &weekAgo},
		"search-digits": {Search: "900123", SearchDigits: "900123"},
		"search-name":   {Search: "person 42"},
		"search-caller": {Search: "caller 4242"},
	}
	only := os.Getenv("CALLS_EXPLAIN_ONLY")
	names := make([]string, 0, len(filters))
	for n := range filters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if only != "" && !strings.Contains(only, name) {
			continue
		}
		f := filters[name]
		f.Limit = 25
		var ds []time.Duration
		var total int
		for range 30 {
			start := time.Now()
			_, tot, err := s.ListCalls(ctx, 1, f)
			if err != nil {
				t.Fatal(err)
			}
			total = tot
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%-15s total=%7d p50=%v max=%v", name, total, ds[len(ds)/2], ds[len(ds)-1])
		if os.Getenv("CALLS_EXPLAIN_PLANS") != "" {
			args := callQueryArgs{int64(1)}
			where := callConditions(f, &args)
			pageArgs := append(callQueryArgs{}, args...)
			inner := `SELECT * FROM calls c WHERE ` + where + ` ORDER BY c.started_at DESC, c.id DESC LIMIT ` +
				pageArgs.add(f.Limit) + ` OFFSET ` + pageArgs.add(f.Offset)
			for _, q := range []struct {
				sql  string
				args []any
			}{{callRowsSQL(inner), pageArgs}, {`SELECT count(*) FROM calls c WHERE ` + where, args}} {
				rows, err := s.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q.sql, q.args...)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var line string
					_ = rows.Scan(&line)
					t.Log("   ", line)
				}
				rows.Close()
			}
		}
	}
	for _, days := range []int{7, 30, 90} {
		for _, num := range []string{"", "num_1_2"} {
			var ds []time.Duration
			for range 20 {
				start := time.Now()
				if _, err := s.CallAnalytics(ctx, AnalyticsQuery{AccountID: 1, NumberPublicID: num, Days: days, Location: time.UTC, Now: now}); err != nil {
					t.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			t.Logf("analytics days=%d number=%q p50=%v max=%v", days, num, ds[len(ds)/2], ds[len(ds)-1])
		}
	}
}
