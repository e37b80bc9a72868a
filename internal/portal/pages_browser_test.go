package portal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
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
		// The hour-of-the-week chart's numbers: each hour summed over the weekdays is by_hour,
		// each weekday summed over its hours is by_day's dates of that weekday.
		weekNumbers := value(p.b, "the hour-of-the-week numbers", chromedp.Evaluate[map[string][]int](`Object.fromEntries([...document.querySelectorAll("#by-week-hour tr[data-day]")].map(tr =>
			[tr.dataset.day, [...tr.querySelectorAll("td[data-hour]")].map(td => +td.textContent)]))`))
		hourSums, dayWant, dayShown := make([]int, 24), map[string]int{}, map[string]int{}
		for day, hours := range weekNumbers {
			if len(hours) != 24 {
				t.Fatalf("the hour-of-the-week numbers give %s %d hours", day, len(hours))
			}
			for h, n := range hours {
				hourSums[h] += n
				dayShown[day] += n
			}
		}
		for d, n := range month.ByDay {
			date, err := time.Parse(time.DateOnly, d)
			if err != nil {
				t.Fatal(err)
			}
			dayWant[date.Weekday().String()] += n
		}
		if month.Summary.Total == 0 {
			t.Error("the demo has no calls in the last 30 days: the charts are not compared")
		}
		if len(weekNumbers) != 7 || !slices.Equal(hourSums, month.ByHour) || !maps.Equal(dayShown, dayWant) {
			t.Errorf("the hour-of-the-week chart sums to %v by hour and %v by weekday; the API's by_hour is %v and by_day by weekday %v",
				hourSums, dayShown, month.ByHour, dayWant)
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

	t.Run("a call page tells the story: caller once, route, summary fields, timed transcript that seeks the player", func(t *testing.T) {
		p.t, p.b.t = t, t
		call := p.recordedCall(t)
		p.b.run("open the call", chromedp.Navigate(p.base+"/portal/calls/"+call.id), chromedp.WaitVisible("#transcript"))
		if got := strings.TrimSpace(p.b.text("#caller")); got != call.from {
			t.Errorf("the caller reads %q; a caller whose network name is their number should read %q once", got, call.from)
		}
		if got := p.b.text("#route"); !strings.Contains(got, "Answered by Alex") {
			t.Errorf("the route reads %q", got)
		}
		var api struct {
			Status, Intent, Urgency string
			CallbackNumber          string   `json:"callback_number"`
			ActionItems             []string `json:"action_items"`
			Segments                []struct {
				Start   float64
				Speaker string
				Text    string
			}
		}
		p.api("/v1/recordings/"+call.recording+"/transcript", &api)
		callback := value(p.b, "callback link", chromedp.Evaluate[string](`document.getElementById("callback").getAttribute("href")`))
		if callback != "tel:"+api.CallbackNumber || p.b.text("#intent") != api.Intent || p.b.text("#urgency") != api.Urgency {
			t.Errorf("the summary shows callback %s, intent %q, urgency %q; the API says %s, %q, %q",
				callback, p.b.text("#intent"), p.b.text("#urgency"), api.CallbackNumber, api.Intent, api.Urgency)
		}
		items := value(p.b, "action items", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#action-items li")].map(li => li.textContent)`))
		if !slices.Equal(items, api.ActionItems) {
			t.Errorf("the action items are %q; the API says %q", items, api.ActionItems)
		}
		type shownSegment struct {
			Start float64
			Said  string
		}
		segs := value(p.b, "segments", chromedp.Evaluate[[]shownSegment](
			`[...document.querySelectorAll("li.segment")].map(li => ({Start: parseFloat(li.dataset.start), Said: li.querySelector(".said").textContent}))`))
		if len(segs) != len(api.Segments) || len(segs) < 2 {
			t.Fatalf("the page shows %d segments; the API has %d", len(segs), len(api.Segments))
		}
		for i, sg := range api.Segments {
			if segs[i].Start != sg.Start || segs[i].Said != sg.Text {
				t.Errorf("segment %d shows %+v; the API has %+v", i, segs[i], sg)
			}
		}
		// Clicking a segment's time moves the player to where it starts.
		p.b.run("wait for the recording's metadata", chromedp.Poll[chromedp.Void](`document.getElementById("recording").readyState >= 1`))
		p.b.run("click the last segment", chromedp.Click(`li.segment:last-child button.seek`))
		last := api.Segments[len(api.Segments)-1].Start
		p.b.run("the player seeks", chromedp.Poll[chromedp.Void](fmt.Sprintf(`Math.abs(document.getElementById("recording").currentTime - %v) < 1`, last)))
		p.screenshot(shots, "call")
	})

	t.Run("a failed transcription says why and what to do", func(t *testing.T) {
		p.t, p.b.t = t, t
		const caller = "+447700900987"
		p.report(t, map[string]any{"disposition": "voicemail", "from": caller, "duration_seconds": 10,
			"recording": map[string]any{"kind": "voicemail", "duration_seconds": 3, "audio_base64": base64.StdEncoding.EncodeToString(seed.ToneWAV(3))}})
		calls, _, err := p.st.ListCalls(context.Background(), p.demo.AccountID, store.CallFilter{Activity: "all", Search: caller, SearchDigits: store.CallSearchDigits(caller), Limit: 1})
		if err != nil || len(calls) != 1 || calls[0].RecordingPublicID == nil {
			t.Fatalf("the reported voicemail: %v %v", calls, err)
		}
		page := p.base + "/portal/calls/" + calls[0].PublicID
		p.b.run("transcribe a voicemail of a tone", chromedp.Navigate(page), chromedp.Click("#transcribe"), chromedp.WaitVisible("#start-transcription"),
			chromedp.Click("#start-transcription"), chromedp.WaitVisible("#notice"))
		// A tone has no speech: the job fails and is refunded, whichever local engine is installed.
		deadline := time.Now().Add(3 * time.Minute)
		for {
			p.b.run("reload the call", chromedp.Navigate(page), chromedp.WaitVisible("#outcome"))
			failed := value(p.b, "look for the failure", chromedp.Evaluate[bool](`!!document.getElementById("summary-why") && document.getElementById("summary-why").textContent.startsWith("The transcription failed")`))
			if failed {
				break
			}
			if time.Now().After(deadline) {
				p.b.fail("failed transcription", fmt.Errorf("the call page did not show a failed transcription within 3 minutes"))
			}
			time.Sleep(time.Second)
		}
		var api struct{ Status string }
		p.api("/v1/recordings/"+*calls[0].RecordingPublicID+"/transcript", &api)
		if api.Status != "failed" {
			t.Errorf("the page says the transcription failed; the API says %q", api.Status)
		}
		if todo := p.b.text("#summary-todo"); !strings.Contains(todo, "refunded") {
			t.Errorf("the page does not say what to do: %q", todo)
		}
		p.b.run("a way to try again", chromedp.WaitVisible("#transcribe"))
		p.screenshot(shots, "call-failed")
	})

	t.Run("to-dos: the API's list, and marking one done is what the API then says", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the to-dos", chromedp.Navigate(p.base+"/portal/todos"), chromedp.WaitVisible("#todos"))
		shown, want := p.ids("#todos li[data-task]", "task"), p.apiIDs("/v1/tasks?status=open", "public_id")
		if !slices.Equal(shown, want) || len(want) == 0 {
			t.Fatalf("the to-dos page lists %v; GET /v1/tasks?status=open lists %v", shown, want)
		}
		p.b.run("mark the first done", chromedp.Click(fmt.Sprintf(`li[data-task=%q] .mark-done`, want[0])), chromedp.WaitVisible("#notice"))
		type doneTask struct {
			PublicID string                 `json:"public_id"`
			DoneBy   *struct{ Name string } `json:"done_by"`
		}
		var done struct{ Data []doneTask }
		p.api("/v1/tasks?status=done", &done)
		i := slices.IndexFunc(done.Data, func(d doneTask) bool { return d.PublicID == want[0] })
		if i < 0 || done.Data[i].DoneBy == nil {
			t.Fatalf("after marking %s done the API's done to-dos are %+v", want[0], done.Data)
		}
		// The page goes back to the open to-dos, without this one; the done ones list it.
		if got := p.ids("#todos li[data-task]", "task"); slices.Contains(got, want[0]) {
			t.Errorf("after marking it done, the open to-dos still show %s", want[0])
		}
		p.b.run("open the done to-dos", chromedp.Navigate(p.base+"/portal/todos?status=done"), chromedp.WaitVisible("#todos"))
		if shown, wantDone := p.ids("#todos li[data-task]", "task"), p.apiIDs("/v1/tasks?status=done", "public_id"); !slices.Equal(shown, wantDone) || !slices.Contains(shown, want[0]) {
			t.Errorf("the done to-dos show %v; GET /v1/tasks?status=done lists %v", shown, wantDone)
		}
		if slices.Contains(p.apiIDs("/v1/tasks?status=open", "public_id"), want[0]) {
			t.Errorf("the API still lists %s as open", want[0])
		}
		p.screenshot(shots, "todos")
		// An id of no to-do of the account is a 404, as in the API.
		status := value(p.b, "mark an unknown to-do", chromedp.Evaluate[int](`fetch("/portal/todos/task_0000000000000000000000/status", {method: "POST", body: new URLSearchParams({status: "done"})}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
		if status != http.StatusNotFound {
			t.Errorf("marking an unknown to-do done answered %d, want 404", status)
		}
	})

	t.Run("notifications: the API's list and unread count, and marking one read", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the notifications", chromedp.Navigate(p.base+"/portal/notifications"), chromedp.WaitVisible("#notifications"))
		var api struct {
			Data []struct {
				ID   string
				Read bool
			}
			UnreadCount int `json:"unread_count"`
		}
		p.api("/v1/notifications", &api)
		want := []string{}
		for _, n := range api.Data {
			want = append(want, n.ID)
		}
		if shown := p.ids("#notifications li[data-notification]", "notification"); !slices.Equal(shown, want) || len(want) == 0 {
			t.Fatalf("the notifications page lists %v; GET /v1/notifications lists %v", shown, want)
		}
		unread := value(p.b, "unread", chromedp.Evaluate[int](`+document.getElementById("unread").dataset.unread`))
		if unread != api.UnreadCount || unread == 0 {
			t.Fatalf("the page says %d unread; the API says %d", unread, api.UnreadCount)
		}
		first := value(p.b, "the first unread", chromedp.Evaluate[string](`document.querySelector('#notifications li[data-read="false"]').dataset.notification`))
		p.b.run("mark it read", chromedp.Click(fmt.Sprintf(`li[data-notification=%q] .mark-read`, first)), chromedp.WaitVisible("#notice"))
		p.api("/v1/notifications", &api)
		for _, n := range api.Data {
			if n.ID == first && !n.Read {
				t.Errorf("the API says %s is still unread", first)
			}
		}
		if got := value(p.b, "unread after", chromedp.Evaluate[int](`+document.getElementById("unread").dataset.unread`)); got != api.UnreadCount || got != unread-1 {
			t.Errorf("after marking one read the page says %d unread, the API %d; before it was %d", got, api.UnreadCount, unread)
		}
		p.screenshot(shots, "notifications")
	})

	t.Run("voicemails: the API's voicemail calls, each with a player that plays", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the voicemails", chromedp.Navigate(p.base+"/portal/voicemails"), chromedp.WaitVisible("#voicemails"))
		shown, want := p.ids("#voicemails li[data-call]", "call"), p.apiIDs("/v1/calls?status=voicemail", "public_id")
		if !slices.Equal(shown, want) || len(want) == 0 {
			t.Fatalf("the voicemails page lists %v; GET /v1/calls?status=voicemail lists %v", shown, want)
		}
		src := value(p.b, "a player's address", chromedp.Evaluate[string](`(a => a ? a.src : "")(document.querySelector("#voicemails audio"))`))
		if src == "" {
			t.Fatal("no voicemail has a player")
		}
		resp, err := http.Get(src)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "audio/") {
			t.Errorf("a voicemail player's src answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		p.screenshot(shots, "voicemails")
	})

	t.Run("job requests: the API's open job requests", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the job requests", chromedp.Navigate(p.base+"/portal/jobs"), chromedp.WaitVisible("#jobs"))
		shown, want := p.ids("#jobs li[data-job]", "job"), p.apiIDs("/v1/job-requests", "public_id")
		if !slices.Equal(shown, want) || len(want) == 0 {
			t.Fatalf("the job requests page lists %v; GET /v1/job-requests lists %v", shown, want)
		}
		p.b.run("show all", chromedp.Navigate(p.base+"/portal/jobs?status=all"), chromedp.WaitVisible("#jobs"))
		if shown, want := p.ids("#jobs li[data-job]", "job"), p.apiIDs("/v1/job-requests?status=all", "public_id"); !slices.Equal(shown, want) {
			t.Errorf("all job requests: the page lists %v; the API %v", shown, want)
		}
		p.screenshot(shots, "jobs")
	})

	t.Run("text messages: the API's threads, and a thread's messages in the API's order", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the text messages", chromedp.Navigate(p.base+"/portal/texts"), chromedp.WaitVisible("#texts"))
		threads := p.apiIDs("/v1/sms/conversations", "public_id")
		if shown := p.ids("#texts li[data-conversation]", "conversation"); !slices.Equal(shown, threads) || len(threads) == 0 {
			t.Fatalf("the text messages page lists %v; GET /v1/sms/conversations lists %v", shown, threads)
		}
		p.b.run("open a thread", chromedp.Click(fmt.Sprintf(`li[data-conversation=%q] a`, threads[0])), chromedp.WaitVisible("#thread"))
		bodies := value(p.b, "the messages", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#thread li[data-direction] .said")].map(e => e.textContent)`))
		if want := p.apiIDs("/v1/sms/conversations/"+threads[0]+"/messages?per_page=25", "body"); !slices.Equal(bodies, want) || len(want) == 0 {
			t.Errorf("the thread shows %q; the API's messages are %q", bodies, want)
		}
		p.screenshot(shots, "text-thread")
	})

	t.Run("contacts: the API's directory, and the same matches for a name and for a number", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the contacts", chromedp.Navigate(p.base+"/portal/contacts"), chromedp.WaitVisible("#contacts"))
		all := p.apiIDs("/v1/contacts", "public_id")
		if shown := p.ids("#contacts li[data-contact]", "contact"); !slices.Equal(shown, all) || len(all) < 2 {
			t.Fatalf("the contacts page lists %v; GET /v1/contacts lists %v", shown, all)
		}
		var first struct {
			Data []struct {
				DisplayName string `json:"display_name"`
				Phones      []struct{ E164 string }
			}
		}
		p.api("/v1/contacts?per_page=1", &first)
		name := strings.Fields(first.Data[0].DisplayName)[0]
		for _, search := range []string{name, first.Data[0].Phones[0].E164[3:9]} {
			// The old page is marked, so waiting for the list waits for the new page's.
			p.b.run("search for "+search, chromedp.Navigate(p.base+"/portal/contacts"), chromedp.SendKeys("#contact-search", search),
				chromedp.Evaluate[chromedp.Void](`document.getElementById("contacts").dataset.old = "1"`),
				chromedp.Click("#search-contacts"), chromedp.WaitVisible("#contacts:not([data-old])"))
			shown := p.ids("#contacts li[data-contact]", "contact")
			want := p.apiIDs("/v1/contacts?search="+url.QueryEscape(search), "public_id")
			if !slices.Equal(shown, want) || len(want) == 0 || len(want) == len(all) {
				t.Errorf("searching for %q shows %v; GET /v1/contacts?search= finds %v of %d", search, shown, want, len(all))
			}
		}
	})

	t.Run("message slips and blocked callers: the API's lists", func(t *testing.T) {
		p.t, p.b.t = t, t
		p.b.run("open the message slips", chromedp.Navigate(p.base+"/portal/messages"), chromedp.WaitVisible("#messages"))
		if shown, want := p.ids("#messages li[data-slip]", "slip"), p.apiIDs("/v1/reception-messages", "public_id"); !slices.Equal(shown, want) || len(want) == 0 {
			t.Errorf("the message slips page lists %v; GET /v1/reception-messages lists %v", shown, want)
		}
		p.b.run("open the blocked callers", chromedp.Navigate(p.base+"/portal/blocked"), chromedp.WaitVisible("#blocked"))
		if shown, want := p.ids("#blocked li[data-blocked]", "blocked"), p.apiIDs("/v1/blocked-callers", "public_id"); !slices.Equal(shown, want) || len(want) == 0 {
			t.Errorf("the blocked callers page lists %v; GET /v1/blocked-callers lists %v", shown, want)
		}
	})

	t.Run("every page passes axe-core and fits a 390-pixel screen", func(t *testing.T) {
		p.t, p.b.t = t, t
		axe := axeSource(t)
		story := p.recordedCall(t)
		pages := map[string]string{"home": "/portal/", "calls": "/portal/calls", "call": "/portal/calls/" + story.id,
			"todos": "/portal/todos?status=all", "notifications": "/portal/notifications", "voicemails": "/portal/voicemails",
			"jobs": "/portal/jobs?status=all", "messages": "/portal/messages", "blocked": "/portal/blocked", "texts": "/portal/texts", "contacts": "/portal/contacts",
			"text-thread": "/portal/texts/" + p.apiIDs("/v1/sms/conversations", "public_id")[0], "balance": "/portal/balance", "keys": "/portal/keys", "webhooks": "/portal/webhooks",
			"team": "/portal/team", "transcribe": "/portal/calls/" + story.id + "/transcribe", "not-found": "/portal/nothing-here"}
		for _, width := range []int64{1280, 390} {
			p.b.run(fmt.Sprintf("a %d-pixel screen", width), chromedp.EmulateViewport(width, 844))
			for _, name := range slices.Sorted(maps.Keys(pages)) {
				p.b.run("open "+name, chromedp.Navigate(p.base+pages[name]), chromedp.WaitVisible("#title"))
				p.checkAccessibility(axe, fmt.Sprintf("%s at %d px", name, width))
				if width == 390 {
					// Nothing makes the page scroll sideways.
					if w := value(p.b, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
						t.Errorf("%s is %d pixels wide on a 390-pixel screen", name, w)
					}
					if name == "home" || name == "call" || name == "todos" {
						p.screenshot(shots, name+"-390")
					}
				}
			}
		}
		// The sign-in page, signed out.
		p.signOut()
		p.checkAccessibility(axe, "sign-in at 390 px")
		p.b.run("back to a wide screen", chromedp.EmulateViewport(1280, 900))
	})
}

// ids reads the data attribute attr of the elements sel matches, in page order.
func (p *portalTest) ids(sel, attr string) []string {
	p.t.Helper()
	return value(p.b, "the "+attr+" of "+sel, chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%q)].map(e => e.dataset[%q])`, sel, attr)))
}

// apiIDs is the field of every row of a page of the API's list at path.
func (p *portalTest) apiIDs(path, field string) []string {
	p.t.Helper()
	var page struct{ Data []map[string]any }
	p.api(path, &page)
	out := []string{}
	for _, row := range page.Data {
		out = append(out, fmt.Sprint(row[field]))
	}
	return out
}

// axeSource is axe-core's script, installed from npm by hack/ensure-axe-core.sh.
func axeSource(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("../../hack/ensure-axe-core.sh").Output()
	if err != nil {
		t.Fatalf("install axe-core with hack/ensure-axe-core.sh (needs node and npm: hack/ensure-tools.sh): %v", err)
	}
	src, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// axeViolation is one rule a page breaks, as axe-core reports it.
type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// checkAccessibility runs axe-core on the current page and fails on any serious or critical violation.
func (p *portalTest) checkAccessibility(axe, where string) {
	p.t.Helper()
	if !value(p.b, "inject axe-core", chromedp.Evaluate[bool](axe+";\ntypeof axe === 'object'")) {
		p.t.Fatal("axe-core did not load")
	}
	found := value(p.b, "run axe-core on "+where, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.map(n => n.target.join(" "))})))`, chromedp.EvalAwaitPromise))
	for _, v := range found {
		p.t.Errorf("%s: %s (%s): %s at %v", where, v.ID, v.Impact, v.Help, v.Nodes)
	}
}

// storyCall is a recorded, transcribed call made for a test.
type storyCall struct{ id, recording, from string }

// recordedCall records an answered call whose network name is its number, with 20 s of audio
// and a completed transcript in three segments, as the seed and the transcription job store them.
func (p *portalTest) recordedCall(t *testing.T) storyCall {
	t.Helper()
	ctx := context.Background()
	nums, err := p.st.ListNumbers(ctx, p.demo.AccountID)
	if err != nil || len(nums) == 0 {
		t.Fatalf("numbers: %v %v", nums, err)
	}
	const from = "+447700900555"
	alex := "Alex"
	started := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	callID, publicID, err := p.st.CreateCall(ctx, store.NewCall{AccountID: p.demo.AccountID, NumberID: &nums[0].ID, FromE164: from,
		ToE164: nums[0].E164, CallerName: from, Disposition: "answered", StartedAt: started, DurationSeconds: 30, TalkSeconds: 20,
		ForwardSeconds: 8, AnsweredBy: &alex})
	if err != nil {
		t.Fatal(err)
	}
	audio := seed.ToneWAV(20)
	key := fmt.Sprintf("%s/%d.wav", p.demo.AccountPublicID, callID)
	if err := p.audio.Put(ctx, key, bytes.NewReader(audio)); err != nil {
		t.Fatal(err)
	}
	rec, err := p.st.CreateRecording(ctx, store.NewRecording{AccountID: p.demo.AccountID, CallID: &callID, Kind: "call", StorageKey: key,
		DurationSeconds: 20, SizeBytes: int64(len(audio)), CreatedAt: started.Add(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	summary, intent, sentiment, urgency, callback := "Boiler pressure keeps dropping", "repair", "negative", "high", "+447700900556"
	if _, err := p.st.CreateCompletedTranscript(ctx, store.NewTranscript{AccountID: p.demo.AccountID, RecordingID: rec.ID, CallID: &callID,
		Text: "Hello. My boiler pressure keeps dropping. Please ring me back.", Language: "en-GB", Minutes: 1, RatedPence: 5,
		Summary: &summary, Intent: &intent, Sentiment: &sentiment, Urgency: &urgency, CallbackNumber: &callback,
		ActionItems: []string{"Call back about the boiler", "Bring a pressure gauge"},
		Segments: []store.TranscriptSegment{
			{StartSeconds: 0, EndSeconds: 2.5, Speaker: "agent", Text: "Hello."},
			{StartSeconds: 2.5, EndSeconds: 9, Speaker: "caller", Text: "My boiler pressure keeps dropping."},
			{StartSeconds: 12.25, EndSeconds: 18, Speaker: "caller", Text: "Please ring me back."},
		},
		CompletedAt: started.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	return storyCall{id: publicID, recording: rec.PublicID, from: from}
}
