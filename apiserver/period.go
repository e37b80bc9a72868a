package apiserver

import (
	"slices"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	listperiod "github.com/switchboard-dev/switchboard/internal/period"
)

// Periods of the list filters (spec: GET /calls, GET /reception-messages).
var periods = append(slices.Clone(listperiod.Presets), "custom")

// TimeWindow is a half-open interval [From, To); nil ends are unbounded.
type TimeWindow struct {
	From *time.Time
	To   *time.Time
}

// parsePeriod reads period, date_from and date_to. Days are the account's calendar days in loc.
// "7d" and "30d" are the last 7 or 30 days including today; "month" is this calendar month.
// Dates without a period mean period=custom; dates with another period are an error.
func parsePeriod(req *restful.Request, fe fieldErrors, def string, loc *time.Location, now time.Time) TimeWindow {
	period := queryEnum(req, fe, "period", def, periods...)
	from, hasFrom := queryDate(req, fe, "date_from")
	to, hasTo := queryDate(req, fe, "date_to")
	if req.QueryParameter("period") == "" && (hasFrom || hasTo) {
		period = "custom"
	}
	return periodWindow(fe, period, from, hasFrom, to, hasTo, loc, now)
}

// periodWindow is the pure decision behind parsePeriod.
func periodWindow(fe fieldErrors, period string, from time.Time, hasFrom bool, to time.Time, hasTo bool, loc *time.Location, now time.Time) TimeWindow {
	day := func(t time.Time, plusDays int) *time.Time {
		d := time.Date(t.Year(), t.Month(), t.Day()+plusDays, 0, 0, 0, 0, loc)
		return &d
	}
	if period != "custom" && (hasFrom || hasTo) {
		fe.add("period", "date_from and date_to are used with period=custom.")
		return TimeWindow{}
	}
	switch period {
	case "today", "7d", "30d", "month":
		from, to := listperiod.Window(period, loc, now)
		return TimeWindow{From: from, To: to}
	case "custom":
		if !hasFrom && !hasTo {
			fe.add("date_from", "period=custom needs date_from, date_to or both.")
			return TimeWindow{}
		}
		if hasFrom && hasTo && from.After(to) {
			fe.add("date_from", "The date_from must be on or before date_to.")
			return TimeWindow{}
		}
		var w TimeWindow
		if hasFrom {
			w.From = day(from, 0)
		}
		if hasTo {
			w.To = day(to, 1)
		}
		return w
	}
	return TimeWindow{}
}

// periodParams documents the period filter.
func periodParams(ws *restful.WebService, def string) []*restful.Parameter {
	return []*restful.Parameter{
		enumParam(ws, "period", "Time window (default "+def+"), in the account's time zone.", periods...).DefaultValue(def),
		ws.QueryParameter("date_from", "First day to include (YYYY-MM-DD), with period=custom.").DataType("string").DataFormat("date"),
		ws.QueryParameter("date_to", "Last day to include (YYYY-MM-DD), with period=custom.").DataType("string").DataFormat("date"),
	}
}

// accountLocation is the account's time zone (Europe/London when unreadable).
func accountLocation(tz string) *time.Location { return listperiod.Location(tz) }
