package billing

import (
	"testing"
	"time"
)

func TestRefusal(t *testing.T) {
	base := Input{Minutes: 4, RatePencePerMin: 5, PlanAllowanceMinutes: 60, AllowanceUsedMinutes: 59, BundleMinutes: 1,
		BalancePence: 10, SpentTodayPence: 40, DailySpendLimitPence: 50}
	with := func(f func(*Input)) Input { in := base; f(&in); return in }
	tests := []struct {
		name string
		in   Input
		want string
		msg  string
	}{
		// 1 allowance + 1 bundle + 2 × 5p = 10p: exactly the balance, exactly the limit.
		{"exactly affordable", base, "", ""},
		{"balance short by a penny", with(func(in *Input) { in.BalancePence = 9 }), RefusedBalance,
			"The prepaid balance (£0.09) cannot cover this transcription (2 minutes from the balance at 5p a minute = £0.10). Top up the balance and try again."},
		{"daily limit passed by a penny", with(func(in *Input) { in.SpentTodayPence = 41 }), RefusedDailyLimit,
			"This transcription (£0.10) would pass the account's daily spending limit of £0.50 (£0.09 left today). Try again tomorrow or raise the limit."},
		{"both: the balance is named", with(func(in *Input) { in.BalancePence = 0; in.SpentTodayPence = 50 }), RefusedBalance, ""},
		{"free charge ignores a lowered limit", with(func(in *Input) { in.Minutes = 2; in.SpentTodayPence = 90; in.BalancePence = 0 }), "", ""},
		{"bundle covers the rest", with(func(in *Input) { in.BundleMinutes = 3; in.BalancePence = 0 }), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Estimate(tt.in)
			if got := Refusal(c); got != tt.want {
				t.Errorf("Refusal = %q, want %q (charge %+v)", got, tt.want, c)
			}
			if tt.msg != "" {
				if got := RefusalMessage(c, tt.in); got != tt.msg {
					t.Errorf("message\n got  %s\n want %s", got, tt.msg)
				}
			}
			if tt.want == "" && RefusalMessage(c, tt.in) != "" {
				t.Errorf("message for an affordable charge")
			}
		})
	}
}

func TestPounds(t *testing.T) {
	for pence, want := range map[int64]string{0: "£0.00", 5: "£0.05", 100: "£1.00", 12345: "£123.45", -250: "-£2.50"} {
		if got := Pounds(pence); got != want {
			t.Errorf("Pounds(%d) = %s, want %s", pence, got, want)
		}
	}
}

func TestPeriods(t *testing.T) {
	london, _ := time.LoadLocation("Europe/London")
	auckland, _ := time.LoadLocation("Pacific/Auckland")
	tests := []struct {
		now        time.Time
		loc        *time.Location
		month, day string
	}{
		{time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC), london, "2026-06-01", "2026-06-15"},
		// 23:30 UTC on 31 May is 00:30 on 1 June in London (BST).
		{time.Date(2026, 5, 31, 23, 30, 0, 0, time.UTC), london, "2026-06-01", "2026-06-01"},
		// 20:00 UTC on 30 June is 08:00 on 1 July in Auckland.
		{time.Date(2026, 6, 30, 20, 0, 0, 0, time.UTC), auckland, "2026-07-01", "2026-07-01"},
		{time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC), time.UTC, "2026-01-01", "2026-01-01"},
	}
	for _, tt := range tests {
		m, d := Periods(tt.now, tt.loc)
		if m.Format(time.DateOnly) != tt.month || d.Format(time.DateOnly) != tt.day {
			t.Errorf("Periods(%s, %s) = %s, %s; want %s, %s", tt.now, tt.loc, m.Format(time.DateOnly), d.Format(time.DateOnly), tt.month, tt.day)
		}
	}
}
