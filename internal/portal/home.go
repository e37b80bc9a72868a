package portal

import (
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/period"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// homeListed is how many open to-dos and new job requests the home page lists.
const homeListed = 5

// lowBalanceFloorPence is the balance under which the home page always warns.
const lowBalanceFloorPence = 500

// lowBalanceMinutes is how many minutes of paid transcription the balance should cover.
const lowBalanceMinutes = 30

// lowBalance reports whether the balance deserves a warning: under £5, or too little for
// lowBalanceMinutes of transcription at the account's rate.
func lowBalance(balancePence int64, ratePencePerMin int) bool {
	return balancePence < max(lowBalanceFloorPence, int64(lowBalanceMinutes)*int64(ratePencePerMin))
}

// windowCounts is one window's business calls on the home page.
type windowCounts struct {
	Key, Label                         string
	Total, Answered, Missed, Voicemail int
}

// urgencyCount is the business calls of one urgency, with the calls list that shows them.
type urgencyCount struct {
	Urgency string
	Calls   int
	Link    string
}

type homeView struct {
	Zone    string
	Windows []windowCounts
	ByDay   barChart
	ByHour  barChart
	// ByWeekHour is the last 30 days' calls by weekday and hour (store.CallsByWeekHour).
	ByWeekHour weekChart
	Sentiment  store.AnalyticsSentiment
	Urgency    []urgencyCount
	// Tasks are the newest open to-dos of TasksOpen; Jobs the newest new job requests of JobsNew.
	Tasks        []store.Task
	TasksOpen    int
	Jobs         []store.JobRequest
	JobsNew      int
	BalancePence int64
	LowBalance   bool
}

// homeWindows are the home page's windows: the store's analytics of the last 1, 7 and 30
// calendar days, the same call as GET /v1/analytics?days=7 and 30.
var homeWindows = []struct {
	key, label string
	days       int
}{{"today", "Today", 1}, {"7d", "Last 7 days", 7}, {"30d", "Last 30 days", 30}}

// home is the day at a glance: the analytics of today, 7 and 30 days in the account's time
// zone, the urgency split, the open to-dos, new job requests and the balance.
func (p *Portal) home(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	loc := period.Location(v.Account.TimeZone)
	now := p.cfg.Clock.Now()
	view := &homeView{Zone: loc.String(), BalancePence: v.Account.BalancePence,
		LowBalance: lowBalance(v.Account.BalancePence, v.Account.TranscriptionRatePencePerMin)}
	var month store.Analytics
	for _, win := range homeWindows {
		a, err := p.store.CallAnalytics(ctx, store.AnalyticsQuery{AccountID: v.Account.ID, Days: win.days, Location: loc, Now: now})
		if err != nil {
			p.fail(w, r, err)
			return
		}
		view.Windows = append(view.Windows, windowCounts{Key: win.key, Label: win.label, Total: a.Summary.Total,
			Answered: a.Summary.Answered, Missed: a.Summary.Missed, Voicemail: a.Summary.Voicemail})
		month = a
	}
	_, _, dates := store.AnalyticsWindow(now, loc, month.Days)
	days := make([]int, len(dates))
	labels := make([]string, len(dates))
	for i, d := range dates {
		days[i] = month.ByDay[d]
		labels[i] = d
	}
	view.ByDay = newBarChart(days, labels, dayTick)
	hours := make([]string, len(month.ByHour))
	for h := range hours {
		hours[h] = fmt.Sprintf("%02d:00", h)
	}
	view.ByHour = newBarChart(month.ByHour, hours, hourTick)
	week, err := p.store.CallsByWeekHour(ctx, v.Account.ID, month.Days, loc, now)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view.ByWeekHour = newWeekChart(week)
	view.Sentiment = month.Sentiment
	// Urgency is not in the analytics; each count is the calls list's total for the filter
	// (GET /v1/calls?period=30d&urgency=...), and links to that list.
	from, to := period.Window("30d", loc, now)
	for _, u := range store.CallUrgencies {
		_, total, err := p.store.ListCalls(ctx, v.Account.ID, store.CallFilter{Activity: store.CallActivities[0], From: from, To: to,
			Urgency: u, Limit: 1})
		if err != nil {
			p.fail(w, r, err)
			return
		}
		view.Urgency = append(view.Urgency, urgencyCount{Urgency: u, Calls: total, Link: "/portal/calls?period=30d&urgency=" + u})
	}
	if view.Tasks, view.TasksOpen, err = p.store.ListTasks(ctx, v.Account.ID, "open", homeListed, 0); err != nil {
		p.fail(w, r, err)
		return
	}
	if view.Jobs, view.JobsNew, err = p.store.ListJobRequests(ctx, v.Account.ID, []string{"new"}, homeListed, 0); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "home.html", page{Title: "Today at " + v.Account.Name, Viewer: &v, Home: view})
}

// dayTick labels a date (YYYY-MM-DD) on the axis every seventh day counting back from the last.
func dayTick(i, n int, label string) string {
	if (n-1-i)%7 != 0 {
		return ""
	}
	d, err := time.Parse(time.DateOnly, label)
	if err != nil {
		return label
	}
	return d.Format("2 Jan")
}

// hourTick labels every sixth hour.
func hourTick(i, _ int, label string) string {
	if i%6 != 0 {
		return ""
	}
	return label[:2]
}

// Chart geometry, in SVG user units: the plot area and the room below it for tick labels.
const (
	chartWidth  = 480
	chartHeight = 140
	chartAxis   = 20
	chartGap    = 2
)

// barChart is a bar chart laid out for an SVG template.
type barChart struct {
	Width, Height, PlotHeight int
	Max, Total                int
	Bars                      []bar
}

// bar is one bar: its box, its value and label, and the tick under it (empty: none) with
// its text-anchor (the first and last ticks keep inside the chart).
type bar struct {
	X, Y, W, H              float64
	TickX                   float64
	Value                   int
	Label, Tick, TickAnchor string
}

// newBarChart lays values out as bars of equal width scaled to the largest value; tick names
// the axis label of bar i of n, or "" for none.
func newBarChart(values []int, labels []string, tick func(i, n int, label string) string) barChart {
	c := barChart{Width: chartWidth, Height: chartHeight + chartAxis, PlotHeight: chartHeight}
	for _, v := range values {
		c.Max = max(c.Max, v)
		c.Total += v
	}
	if len(values) == 0 {
		return c
	}
	slot := float64(chartWidth) / float64(len(values))
	for i, v := range values {
		h := 0.0
		if c.Max > 0 {
			h = float64(chartHeight) * float64(v) / float64(c.Max)
		}
		b := bar{X: float64(i)*slot + chartGap/2, Y: float64(chartHeight) - h, W: slot - chartGap, H: h,
			TickX: float64(i)*slot + slot/2, Value: v, Label: labels[i], Tick: tick(i, len(values), labels[i]), TickAnchor: "middle"}
		switch i {
		case 0:
			b.TickX, b.TickAnchor = float64(i)*slot, "start"
		case len(values) - 1:
			b.TickX, b.TickAnchor = float64(i+1)*slot, "end"
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}
