package billing

import "testing"

func TestMinutesFor(t *testing.T) {
	tests := []struct {
		seconds int
		size    int64
		want    int
	}{
		{0, 0, 0},
		{0, 1200, 1},
		{1, 0, 1},
		{59, 0, 1},
		{60, 0, 1},
		{61, 0, 2},
		{120, 9000, 2},
		{121, 0, 3},
		{-5, 0, 0},
	}
	for _, tt := range tests {
		if got := MinutesFor(tt.seconds, tt.size); got != tt.want {
			t.Errorf("MinutesFor(%d, %d) = %d, want %d", tt.seconds, tt.size, got, tt.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	base := Input{RatePencePerMin: 5, PlanAllowanceMinutes: 60, BalancePence: 1000, DailySpendLimitPence: 5000}
	with := func(f func(*Input)) Input {
		in := base
		f(&in)
		return in
	}
	tests := []struct {
		name string
		in   Input
		want Charge
	}{
		{"allowance covers all", with(func(in *Input) { in.Minutes = 3; in.AllowanceUsedMinutes = 10 }),
			Charge{Minutes: 3, AllowanceMinutes: 3, WithinAllowance: true, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"allowance exactly used up by it", with(func(in *Input) { in.Minutes = 4; in.AllowanceUsedMinutes = 56 }),
			Charge{Minutes: 4, AllowanceMinutes: 4, WithinAllowance: true, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"allowance then bundle", with(func(in *Input) { in.Minutes = 5; in.AllowanceUsedMinutes = 58; in.BundleMinutes = 10 }),
			Charge{Minutes: 5, AllowanceMinutes: 2, BundleMinutes: 3, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"bundle covers all", with(func(in *Input) { in.Minutes = 5; in.AllowanceUsedMinutes = 60; in.BundleMinutes = 5 }),
			Charge{Minutes: 5, BundleMinutes: 5, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"allowance, bundle, then balance", with(func(in *Input) { in.Minutes = 10; in.AllowanceUsedMinutes = 57; in.BundleMinutes = 4 }),
			Charge{Minutes: 10, AllowanceMinutes: 3, BundleMinutes: 4, BalanceMinutes: 3, CostPence: 15, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"over-used allowance counts as none left", with(func(in *Input) { in.Minutes = 2; in.AllowanceUsedMinutes = 75 }),
			Charge{Minutes: 2, BalanceMinutes: 2, CostPence: 10, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"plan without allowance", with(func(in *Input) { in.Minutes = 2; in.PlanAllowanceMinutes = 0 }),
			Charge{Minutes: 2, BalanceMinutes: 2, CostPence: 10, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"balance exactly enough", with(func(in *Input) { in.Minutes = 4; in.PlanAllowanceMinutes = 0; in.BalancePence = 20 }),
			Charge{Minutes: 4, BalanceMinutes: 4, CostPence: 20, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"balance one penny short", with(func(in *Input) { in.Minutes = 4; in.PlanAllowanceMinutes = 0; in.BalancePence = 19 }),
			Charge{Minutes: 4, BalanceMinutes: 4, CostPence: 20, WithinDailyLimit: true}},
		{"daily limit exactly reached", with(func(in *Input) {
			in.Minutes = 4
			in.PlanAllowanceMinutes = 0
			in.SpentTodayPence = 4980
		}), Charge{Minutes: 4, BalanceMinutes: 4, CostPence: 20, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"daily limit would be passed", with(func(in *Input) {
			in.Minutes = 4
			in.PlanAllowanceMinutes = 0
			in.SpentTodayPence = 4981
		}), Charge{Minutes: 4, BalanceMinutes: 4, CostPence: 20, CoveredByBalance: true}},
		{"free charge ignores a limit already passed", with(func(in *Input) {
			in.Minutes = 4
			in.SpentTodayPence = 6000
		}), Charge{Minutes: 4, AllowanceMinutes: 4, WithinAllowance: true, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"zero minutes", with(func(in *Input) { in.Minutes = 0; in.PlanAllowanceMinutes = 0; in.BalancePence = 0 }),
			Charge{WithinAllowance: true, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
		{"large amounts stay exact", with(func(in *Input) {
			in.Minutes = 2_000_000
			in.PlanAllowanceMinutes = 0
			in.RatePencePerMin = 2_000
			in.BalancePence = 4_000_000_000
			in.DailySpendLimitPence = 4_000_000_000
		}), Charge{Minutes: 2_000_000, BalanceMinutes: 2_000_000, CostPence: 4_000_000_000, CoveredByBalance: true, WithinDailyLimit: true, Affordable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Estimate(tt.in)
			if got != tt.want {
				t.Errorf("Estimate(%+v)\n got  %+v\n want %+v", tt.in, got, tt.want)
			}
			if got.AllowanceMinutes+got.BundleMinutes+got.BalanceMinutes != got.Minutes {
				t.Errorf("split %+v does not add up to the minutes", got)
			}
		})
	}
}
