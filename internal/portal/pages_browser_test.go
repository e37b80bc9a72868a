package portal_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// api calls GET path of the v1 API with the demo owner's key and decodes the answer into out.
func (p *portalTest) api(path string, out any) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.demo.OwnerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
}

// pageTotal is the total of a page of the API's lists.
func (p *portalTest) pageTotal(path string) int {
	p.t.Helper()
	var page struct{ Total int }
	p.api(path, &page)
	return page.Total
}

// artifactDir is where screenshots go: $SWITCHBOARD_ARTIFACTS when set, else under the test's TempDir.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("SWITCHBOARD_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the whole current page as name.png in dir.
func (p *portalTest) screenshot(dir, name string) {
	p.t.Helper()
	shot := value(p.b, "screenshot "+name, chromedp.FullScreenshot(100)) // 100: PNG
	if err := os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// analyticsAnswer is the part of GET /v1/analytics the home page shows.
type analyticsAnswer struct {
	Summary struct {
		Total, Answered, Missed, Voicemail int
	}
	ByDay     map[string]int `json:"by_day"`
	ByHour    []int          `json:"by_hour"`
	Sentiment struct{ Positive, Neutral, Negative int }
}

// shownWindow is one window's counts as the home page shows them.
type shownWindow struct {
	Total, Answered, Missed, Voicemail int
}

func (p *portalTest) shownWindow(key string) shownWindow {
	p.t.Helper()
	return value(p.b, "the "+key+" counts", chromedp.Evaluate[shownWindow](fmt.Sprintf(
		`(d => ({Total: +d.total, Answered: +d.answered, Missed: +d.missed, Voicemail: +d.voicemail}))(document.getElementById(%q).dataset)`,
		"window-"+key)))
}

// chartRows is a chart's numbers as the page lists them: label and value of each bar.
func (p *portalTest) chartRows(id string) ([]string, []int) {
	p.t.Helper()
	type row struct {
		Label string
		Value int
	}
	rows := value(p.b, "the numbers of "+id, chromedp.Evaluate[[]row](fmt.Sprintf(
		`[...document.querySelectorAll("#%s tr[data-label]")].map(r => ({Label: r.dataset.label, Value: +r.dataset.value}))`, id)))
	bars := value(p.b, "the bars of "+id, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll("#%s svg rect.bar").length`, id)))
	if bars != len(rows) {
		p.t.Errorf("%s draws %d bars for %d numbers", id, bars, len(rows))
	}
	labels, values := make([]string, len(rows)), make([]int, len(rows))
	for i, r := range rows {
		labels[i], values[i] = r.Label, r.Value
	}
	return labels, values
}

func TestPortalPagesMatchTheAPI(t *testing.T) {
	p := startPortalWith(t, 60)
	shots := artifactDir(t)
	p.signIn(p.demo.OwnerEmail)

	t.Run("home shows the analytics API's numbers", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open home", chromedp.Navigate(p.base+"/portal/"), chromedp.WaitVisible("#window-30d"))
		var week, month analyticsAnswer
		p.api("/v1/analytics?days=7", &week)
		p.api("/v1/analytics?days=30", &month)
		if month.Summary.Total == 0 {
			t.Fatal("the demo account has no business calls in 30 days: nothing to compare")
		}
		for key, want := range map[string]analyticsAnswer{"7d": week, "30d": month} {
			got := p.shownWindow(key)
			if got != (shownWindow{want.Summary.Total, want.Summary.Answered, want.Summary.Missed, want.Summary.Voicemail}) {
				t.Errorf("home shows %s as %+v; GET /v1/analytics says %+v", key, got, want.Summary)
			}
		}
		// Today is the last date of the window, in the account's time zone.
		dates := slices.Sorted(func(yield func(string) bool) {
			for d := range month.ByDay {
				if !yield(d) {
					return
				}
			}
		})
		today := dates[len(dates)-1]
		if got := p.shownWindow("today"); got.Total != month.ByDay[today] || got.Answered+got.Missed+got.Voicemail > got.Total {
			t.Errorf("home shows today as %+v; GET /v1/analytics by_day[%s] is %d", got, today, month.ByDay[today])
		}
		labels, values := p.chartRows("by-day")
		wantValues := make([]int, len(dates))
		for i, d := range dates {
			wantValues[i] = month.ByDay[d]
		}
		if !slices.Equal(labels, dates) || !slices.Equal(values, wantValues) {
			t.Errorf("the calls-per-day chart has %v %v; the API's by_day is %v", labels, values, month.ByDay)
		}
		if _, hours := p.chartRows("by-hour"); !slices.Equal(hours, month.ByHour) {
			t.Errorf("the calls-by-hour chart has %v; the API's by_hour is %v", hours, month.ByHour)
		}
		sentiment := value(p.b, "sentiment", chromedp.Evaluate[[]int](
			`(d => [+d.positive, +d.neutral, +d.negative])(document.getElementById("sentiment").dataset)`))
		if want := []int{month.Sentiment.Positive, month.Sentiment.Neutral, month.Sentiment.Negative}; !slices.Equal(sentiment, want) {
			t.Errorf("home shows sentiment %v; the API says %v", sentiment, want)
		}
		for _, u := range []string{"low", "normal", "high"} {
			got := value(p.b, "urgency "+u, chromedp.Evaluate[int](fmt.Sprintf(`+document.querySelector('#urgency [data-urgency=%q]').dataset.calls`, u)))
			if want := p.pageTotal("/v1/calls?period=30d&per_page=1&urgency=" + u); got != want {
				t.Errorf("home shows %d calls of %s urgency; GET /v1/calls?period=30d&urgency=%s totals %d", got, u, u, want)
			}
		}
		openTasks := value(p.b, "open to-dos", chromedp.Evaluate[int](`+document.getElementById("open-tasks").dataset.open`))
		if want := p.pageTotal("/v1/tasks?status=open&per_page=1"); openTasks != want || want == 0 {
			t.Errorf("home shows %d open to-dos; GET /v1/tasks says %d", openTasks, want)
		}
		newJobs := value(p.b, "new job requests", chromedp.Evaluate[int](`+document.getElementById("new-jobs").dataset.new`))
		if want := p.pageTotal("/v1/job-requests?status=new&per_page=1"); newJobs != want {
			t.Errorf("home shows %d new job requests; GET /v1/job-requests says %d", newJobs, want)
		}
		var balance struct {
			BalancePence int64 `json:"balance_pence"`
		}
		p.api("/v1/balance", &balance)
		if got, want := p.b.text("#home-balance"), fmt.Sprintf("£%d.%02d", balance.BalancePence/100, balance.BalancePence%100); strings.TrimSpace(got) != want {
			t.Errorf("home shows the balance %q; GET /v1/balance says %s", got, want)
		}
		p.screenshot(shots, "home")
	})
}
