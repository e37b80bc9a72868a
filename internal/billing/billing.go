// Package billing holds the pure pricing decisions of paid features. It reads nothing and
// writes nothing: the store gathers the inputs, and the same function prices an estimate
// and the charge itself, so what is quoted is what is charged.
package billing

// MinutesFor is the billable minutes of a recording: whole minutes rounded up, and at
// least one for a recording that holds any audio (a length of 0 seconds with bytes stored).
func MinutesFor(durationSeconds int, sizeBytes int64) int {
	if durationSeconds < 0 {
		durationSeconds = 0
	}
	m := (durationSeconds + 59) / 60
	if m == 0 && sizeBytes > 0 {
		m = 1
	}
	return m
}

// Input is everything a transcription's price depends on.
type Input struct {
	// Minutes to transcribe (see MinutesFor).
	Minutes int
	// RatePencePerMin is the account's price of a minute paid from the balance.
	RatePencePerMin int
	// PlanAllowanceMinutes is the plan's monthly allowance; AllowanceUsedMinutes is how
	// much of it this calendar month (in the account's time zone) has already used.
	PlanAllowanceMinutes int
	AllowanceUsedMinutes int
	// BundleMinutes are the prepaid minutes the account holds.
	BundleMinutes int
	// BalancePence is the prepaid balance.
	BalancePence int64
	// SpentTodayPence is what charged transcriptions cost today (account's time zone);
	// DailySpendLimitPence caps it.
	SpentTodayPence      int64
	DailySpendLimitPence int64
}

// Charge is how a transcription is paid: minutes from the monthly allowance first, then
// from prepaid bundle minutes, and the rest from the balance at the account's rate.
type Charge struct {
	Minutes          int
	AllowanceMinutes int
	BundleMinutes    int
	BalanceMinutes   int
	// CostPence is the part paid from the balance.
	CostPence int64
	// WithinAllowance: every minute comes from the monthly allowance.
	WithinAllowance bool
	// CoveredByBalance: the balance holds CostPence.
	CoveredByBalance bool
	// WithinDailyLimit: today's spend plus CostPence stays within the daily limit.
	WithinDailyLimit bool
	// Affordable: the charge can be made now (both of the above).
	Affordable bool
}

// Estimate splits the price of a transcription of in.Minutes minutes.
// A charge that costs nothing from the balance is always within the daily limit: the limit
// caps spending, and such a charge spends nothing (even if the limit was lowered below what
// was already spent today).
func Estimate(in Input) Charge {
	c := Charge{Minutes: max(in.Minutes, 0)}
	rest := c.Minutes

	allowanceLeft := max(in.PlanAllowanceMinutes-max(in.AllowanceUsedMinutes, 0), 0)
	c.AllowanceMinutes = min(rest, allowanceLeft)
	rest -= c.AllowanceMinutes

	c.BundleMinutes = min(rest, max(in.BundleMinutes, 0))
	rest -= c.BundleMinutes

	c.BalanceMinutes = rest
	c.CostPence = int64(rest) * int64(max(in.RatePencePerMin, 0))

	c.WithinAllowance = c.AllowanceMinutes == c.Minutes
	c.CoveredByBalance = c.CostPence <= in.BalancePence
	c.WithinDailyLimit = c.CostPence == 0 || in.SpentTodayPence+c.CostPence <= in.DailySpendLimitPence
	c.Affordable = c.CoveredByBalance && c.WithinDailyLimit
	return c
}
