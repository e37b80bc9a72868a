package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// The weekday and hour grid of the last 30 days in a zone 5:45 ahead of UTC: a call just past
// local midnight on a Monday is Monday's hour 0, a filtered call and a call before the window
// are left out, and over a few thousand calls each hour's total is CallAnalytics' by_hour and
// each weekday's the sum of by_day's dates of that weekday.
func TestCallsByWeekHour(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC) // a Wednesday
	tenant := apitest.NewTenant(t, st, plans.Business)
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: tenant.Account.ID, E164: "+442079469901", Label: "Office"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(at time.Time, filtered bool) {
		t.Helper()
		if _, _, err := st.CreateCall(ctx, store.NewCall{AccountID: tenant.Account.ID, NumberID: &num.ID, FromE164: "+447700900001",
			ToE164: num.E164, Disposition: "answered", StartedAt: at, Filtered: filtered}); err != nil {
			t.Fatal(err)
		}
	}
	call(time.Date(2026, 7, 12, 18, 20, 0, 0, time.UTC), false)                // Monday 13 July 00:05 in Kathmandu
	call(time.Date(2026, 7, 12, 18, 10, 0, 0, time.UTC), false)                // Sunday 12 July 23:55
	call(time.Date(2026, 7, 12, 18, 30, 0, 0, time.UTC), true)                 // filtered: not a business call
	call(time.Date(2026, 6, 15, 18, 0, 0, 0, time.UTC).Add(-time.Hour), false) // before the 30-day window
	grid, err := st.CallsByWeekHour(ctx, tenant.Account.ID, 30, kathmandu, now)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, hours := range grid {
		for _, n := range hours {
			total += n
		}
	}
	if grid[0][0] != 1 || grid[6][23] != 1 || total != 2 {
		t.Errorf("Monday 00:00 has %d, Sunday 23:00 %d, all %d; want 1, 1 and 2", grid[0][0], grid[6][23], total)
	}

	if err := seed.BulkCalls(ctx, st, tenant.Account.ID, []int64{num.ID}, 3000, seed.BulkOptions{Now: now, History: 40 * 24 * time.Hour, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	var filtered int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM calls WHERE account_id = $1 AND filtered`, tenant.Account.ID).Scan(&filtered); err != nil || filtered < 2 {
		t.Fatalf("filtered calls among the seeded: %d (%v)", filtered, err)
	}
	grid, err = st.CallsByWeekHour(ctx, tenant.Account.ID, 30, kathmandu, now)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CallAnalytics(ctx, store.AnalyticsQuery{AccountID: tenant.Account.ID, Days: 30, Location: kathmandu, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for h := range 24 {
		var sum int
		for w := range 7 {
			sum += grid[w][h]
		}
		if sum != a.ByHour[h] {
			t.Errorf("hour %d: the grid sums to %d, by_hour says %d", h, sum, a.ByHour[h])
		}
	}
	byWeekday := [7]int{}
	for d, n := range a.ByDay {
		day, err := time.Parse(time.DateOnly, d)
		if err != nil {
			t.Fatal(err)
		}
		byWeekday[(int(day.Weekday())+6)%7] += n
	}
	for w := range 7 {
		var sum int
		for _, n := range grid[w] {
			sum += n
		}
		if sum != byWeekday[w] {
			t.Errorf("weekday %d (Monday 0): the grid sums to %d, by_day's dates of that weekday to %d", w, sum, byWeekday[w])
		}
	}
	if a.Summary.Total < 1000 {
		t.Errorf("only %d calls in the window; the comparison needs many", a.Summary.Total)
	}
}
