package billing

import (
	"fmt"
	"time"
)

// Why a transcription cannot be charged now (see Refusal).
const (
	// RefusedBalance: the prepaid balance does not hold the part paid from it.
	RefusedBalance = "balance"
	// RefusedDailyLimit: the charge would take today's spending past the daily limit.
	RefusedDailyLimit = "daily_limit"
)

// Refusal says why c cannot be charged ("" when it can). When both the balance and the daily
// limit stand in the way the balance is named: topping up is the first thing to do, and the
// limit is reported once the balance covers the charge.
func Refusal(c Charge) string {
	switch {
	case !c.CoveredByBalance:
		return RefusedBalance
	case !c.WithinDailyLimit:
		return RefusedDailyLimit
	}
	return ""
}

// RefusalMessage is the plain-language 402 message for a refused charge.
func RefusalMessage(c Charge, in Input) string {
	switch Refusal(c) {
	case RefusedBalance:
		return fmt.Sprintf("The prepaid balance (%s) cannot cover this transcription (%d %s from the balance at %dp a minute = %s). Top up the balance and try again.",
			Pounds(in.BalancePence), c.BalanceMinutes, minutesWord(c.BalanceMinutes), max(in.RatePencePerMin, 0), Pounds(c.CostPence))
	case RefusedDailyLimit:
		left := max(in.DailySpendLimitPence-in.SpentTodayPence, 0)
		return fmt.Sprintf("This transcription (%s) would pass the account's daily spending limit of %s (%s left today). Try again tomorrow or raise the limit.",
			Pounds(c.CostPence), Pounds(in.DailySpendLimitPence), Pounds(left))
	}
	return ""
}

// Pounds renders pence as pounds, e.g. 1234 → "£12.34".
func Pounds(pence int64) string {
	sign := ""
	if pence < 0 {
		sign, pence = "-", -pence
	}
	return fmt.Sprintf("%s£%d.%02d", sign, pence/100, pence%100)
}

func minutesWord(n int) string {
	if n == 1 {
		return "minute"
	}
	return "minutes"
}

// Periods are the calendar month (its first day) and the day that now falls in, in loc:
// the allowance is counted per month and spending per day in the account's time zone.
func Periods(now time.Time, loc *time.Location) (month, day time.Time) {
	now = now.In(loc)
	day = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	return month, day
}
