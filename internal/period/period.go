// Package period turns the list filters' named periods into time windows, for the API and the
// portal alike. Days are the account's calendar days.
package period

import "time"

// Presets are the named periods; the API adds custom (explicit dates).
var Presets = []string{"all", "today", "7d", "30d", "month"}

// Window is the half-open interval [From, To) of a preset in loc at now; nil ends are
// unbounded ("all", or a name that is not a preset). "7d" and "30d" are the last 7 or 30 days
// including today; "month" is this calendar month.
func Window(name string, loc *time.Location, now time.Time) (from, to *time.Time) {
	local := now.In(loc)
	day := func(plusDays int) *time.Time {
		d := time.Date(local.Year(), local.Month(), local.Day()+plusDays, 0, 0, 0, 0, loc)
		return &d
	}
	switch name {
	case "today":
		return day(0), day(1)
	case "7d":
		return day(-6), day(1)
	case "30d":
		return day(-29), day(1)
	case "month":
		start := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, loc)
		end := start.AddDate(0, 1, 0)
		return &start, &end
	}
	return nil, nil
}

// Location is an account's time zone (Europe/London when unreadable).
func Location(tz string) *time.Location {
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	loc, _ := time.LoadLocation("Europe/London")
	return loc
}
