package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// apiDelivery is a delivery as GET /v1/webhooks/{endpoint}/deliveries answers it.
type apiDelivery struct {
	Event        string    `json:"event"`
	EventID      string    `json:"event_id"`
	Status       string    `json:"status"`
	Attempts     int       `json:"attempts"`
	ResponseCode int       `json:"response_code"`
	LastError    string    `json:"last_error"`
	CreatedAt    time.Time `json:"created_at"`
}

// shownDelivery is a row of a delivery page.
type shownDelivery struct {
	Status, Attempts, ResponseCode, LastError string
}

// checkDeliveryPage opens the log's link to got's event and checks that the page shows the
// API's deliveries of that event and, as its payload, the body the receiver was sent; and that
// it passes axe-core and fits a 390-pixel screen.
func (p *portalTest) checkDeliveryPage(endpoint string, got delivered) {
	p.t.Helper()
	p.b.run("open the delivery of "+got.ID, chromedp.Navigate(p.base+"/portal/webhooks/"+endpoint),
		chromedp.Click(fmt.Sprintf(`tr[data-event=%q] a.event-link`, got.ID)), chromedp.WaitVisible("#payload"))
	var list struct{ Deliveries []apiDelivery }
	p.api("/v1/webhooks/"+endpoint+"/deliveries", &list)
	var want []shownDelivery
	for _, d := range list.Deliveries {
		if d.EventID != got.ID {
			continue
		}
		code := "—"
		if d.ResponseCode != 0 {
			code = strconv.Itoa(d.ResponseCode)
		}
		want = append(want, shownDelivery{d.Status, strconv.Itoa(d.Attempts), code, d.LastError})
	}
	shown := value(p.b, "the delivery rows", chromedp.Evaluate[[]shownDelivery](`[...document.querySelectorAll("#event-deliveries tbody tr")].map(tr => ({
		Status: tr.querySelector(".delivery-status").textContent, Attempts: tr.querySelector(".attempts").textContent,
		ResponseCode: tr.querySelector(".response-code").textContent, LastError: tr.querySelector(".last-error").textContent}))`))
	if len(want) == 0 || !reflect.DeepEqual(shown, want) {
		p.t.Errorf("the delivery page of %s shows %+v; the API's deliveries of that event are %+v", got.ID, shown, want)
	}
	// Each delivery that finished at its first attempt shows that attempt, from its history
	// row: its code, and no body (none is kept for it).
	wantAttempts := []string{}
	for _, d := range list.Deliveries {
		if d.EventID == got.ID && d.Attempts == 1 {
			wantAttempts = append(wantAttempts, strconv.Itoa(d.ResponseCode)+" not kept")
		}
	}
	shownAttempts := value(p.b, "the attempts", chromedp.Evaluate[[]string](`[...document.querySelectorAll("li.attempt")].map(li =>
		li.querySelector(".attempt-code").textContent + " " + (li.querySelector(".attempt-no-body") ? "not kept" : "kept"))`))
	if len(wantAttempts) == 0 || !reflect.DeepEqual(shownAttempts, wantAttempts) {
		p.t.Errorf("the delivery page of %s shows the attempts %v; want %v (from the API's deliveries)", got.ID, shownAttempts, wantAttempts)
	}
	if typ := p.b.text("#event-type"); typ != got.Event {
		p.t.Errorf("the delivery page says the event is %q; the receiver got %q", typ, got.Event)
	}
	var page, sent any
	if err := json.Unmarshal([]byte(p.b.text("#payload")), &page); err != nil {
		p.t.Fatalf("the payload shown is not JSON: %v", err)
	}
	if err := json.Unmarshal(got.Body, &sent); err != nil {
		p.t.Fatal(err)
	}
	if !reflect.DeepEqual(page, sent) {
		p.t.Errorf("the delivery page's payload is %v; the receiver was sent %v", page, sent)
	}
	p.checkNarrow("delivery of "+got.Event, true)
}

// checkNarrow runs axe-core on the current page at 390 pixels wide, checks that it does not
// scroll sideways, optionally keeps a screenshot, and goes back to a wide screen.
func (p *portalTest) checkNarrow(name string, shot bool) {
	p.t.Helper()
	axe := axeSource(p.t)
	p.b.run("a 390-pixel screen", chromedp.EmulateViewport(390, 844))
	defer p.b.run("back to a wide screen", chromedp.EmulateViewport(1280, 900))
	p.checkAccessibility(axe, name+" at 390 px")
	if w := value(p.b, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		wide := value(p.b, "what overflows", chromedp.Evaluate[[]string](overflowingElements))
		p.t.Errorf("%s is %d pixels wide on a 390-pixel screen; past its right edge: %v", name, w, wide)
	}
	if shot {
		p.screenshot(artifactDir(p.t), strings.ReplaceAll(name, " ", "-")+"-390")
	}
}

// overflowingElements lists the innermost elements that reach past the viewport's right edge,
// with their text, so that a failure names what to fix.
const overflowingElements = `[...document.body.querySelectorAll("*")]
	.filter(el => el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
	.filter((el, _, all) => !all.some(other => other !== el && el.contains(other)))
	.slice(0, 10)
	.map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
		" right=" + Math.round(el.getBoundingClientRect().right) + " " + JSON.stringify((el.textContent || el.value || "").trim().slice(0, 80)))`

// checkLogFilter filters the endpoint's delivery log by event and status with the page's form
// and checks that it lists, in order, the API's deliveries of that event and status.
func (p *portalTest) checkLogFilter(endpoint, event, status string) {
	p.t.Helper()
	p.b.run("filter the log by "+event+" "+status, chromedp.Navigate(p.base+"/portal/webhooks/"+endpoint),
		chromedp.SetValue("#filter-event", event), chromedp.SetValue("#filter-status", status),
		chromedp.Click("#filter-deliveries"), chromedp.WaitVisible("#filtered"))
	if u := value(p.b, "the filtered address", chromedp.Evaluate[string](`location.search`)); u != "?event="+event+"&status="+status {
		p.t.Errorf("the filter form went to %q", u)
	}
	var list struct{ Deliveries []apiDelivery }
	p.api("/v1/webhooks/"+endpoint+"/deliveries", &list)
	want := []string{}
	for _, d := range list.Deliveries {
		if d.Event == event && d.Status == status {
			want = append(want, d.EventID+" "+d.Status)
		}
	}
	shown := value(p.b, "the filtered rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#deliveries tr[data-event]")].map(tr => tr.dataset.event + " " + tr.dataset.status)`))
	if len(want) == 0 || len(want) == len(list.Deliveries) || !reflect.DeepEqual(shown, want) {
		p.t.Errorf("the log filtered by %s %s lists %v; the API's deliveries of that kind are %v (of %d)", event, status, shown, want, len(list.Deliveries))
	}
	p.checkNarrow("log filtered by "+event+" "+status, false)
}

// apiRateLimit is the endpoint's rate_limit as GET /v1/webhooks answers it.
func (p *portalTest) apiRateLimit(endpoint string) *int {
	p.t.Helper()
	var list struct {
		Endpoints []struct {
			PublicID  string `json:"public_id"`
			RateLimit *int   `json:"rate_limit"`
		}
	}
	p.api("/v1/webhooks", &list)
	for _, e := range list.Endpoints {
		if e.PublicID == endpoint {
			return e.RateLimit
		}
	}
	p.t.Fatalf("GET /v1/webhooks does not list %s", endpoint)
	return nil
}

// checkRateLimit refuses, sets and removes the endpoint's rate limit with the page's forms and
// checks each against the API: the refusal in the API's words, the limit in GET /v1/webhooks.
func (p *portalTest) checkRateLimit(endpoint string) {
	p.t.Helper()
	page := p.base + "/portal/webhooks/" + endpoint
	req, _ := http.NewRequest(http.MethodPatch, p.base+"/v1/webhooks/"+endpoint, strings.NewReader(`{"rate_limit": 1001}`))
	req.Header.Set("Authorization", "Bearer "+p.demo.OwnerKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	var refusal struct{ Errors map[string][]string }
	_ = json.NewDecoder(resp.Body).Decode(&refusal)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || len(refusal.Errors["rate_limit"]) != 1 {
		p.t.Fatalf("PATCH rate_limit 1001 answered %d %v", resp.StatusCode, refusal.Errors)
	}
	for _, bad := range []string{"1001", "0", "2.5"} {
		p.b.run("set the rate limit to "+bad, chromedp.Navigate(page), chromedp.SetValue("#rate-limit", bad),
			chromedp.Click("#set-rate-limit"), chromedp.WaitVisible("#rate-limit-error"))
		if got := p.b.text("#rate-limit-error"); got != refusal.Errors["rate_limit"][0] {
			p.t.Errorf("a rate limit of %s is refused with %q; the API says %q", bad, got, refusal.Errors["rate_limit"][0])
		}
	}
	p.checkNarrow("rate limit refused", false)
	if rl := p.apiRateLimit(endpoint); rl != nil {
		p.t.Errorf("after refusals the API's rate_limit is %d", *rl)
	}
	p.b.run("set the rate limit to 7", chromedp.Navigate(page), chromedp.SetValue("#rate-limit", "7"),
		chromedp.Click("#set-rate-limit"), chromedp.WaitVisible("#remove-rate-limit"))
	if rl := p.apiRateLimit(endpoint); rl == nil || *rl != 7 || p.b.text("#endpoint-rate-limit") != "7 a second" {
		p.t.Errorf("after setting 7 the page shows %q and the API's rate_limit is %v", p.b.text("#endpoint-rate-limit"), rl)
	}
	p.b.run("remove the rate limit", chromedp.Click("#remove-rate-limit"), chromedp.WaitNotPresent("#remove-rate-limit"))
	if rl := p.apiRateLimit(endpoint); rl != nil || p.b.text("#endpoint-rate-limit") != "None" {
		p.t.Errorf("after removing it the page shows %q and the API's rate_limit is %v", p.b.text("#endpoint-rate-limit"), rl)
	}
}

// checkRecover has a call's delivery cancelled while the endpoint is paused, then recovers
// since a minute before it with the page's form (a time in the account's zone) and checks the
// answer against the API's log: as many as the events whose latest delivery since then was
// failed or cancelled. The event arrives, and the API's recover since the same time then
// queues nothing twice.
func (p *portalTest) checkRecover(endpoint string) {
	p.t.Helper()
	page := p.base + "/portal/webhooks/" + endpoint
	p.b.run("pause the endpoint", chromedp.Navigate(page), chromedp.Click("#pause"), chromedp.WaitVisible("#resume"))
	var before struct{ Deliveries []apiDelivery }
	p.api("/v1/webhooks/"+endpoint+"/deliveries", &before)
	p.reportCall(p.t)
	var fresh apiDelivery
	deadline := time.Now().Add(60 * time.Second)
	for fresh.EventID == "" {
		var list struct{ Deliveries []apiDelivery }
		p.api("/v1/webhooks/"+endpoint+"/deliveries", &list)
		if len(list.Deliveries) > len(before.Deliveries) && list.Deliveries[0].Status == "cancelled" {
			fresh = list.Deliveries[0]
		} else if time.Now().After(deadline) {
			p.t.Fatalf("no cancelled delivery of the new call after 60 s: %+v", list.Deliveries)
		} else {
			time.Sleep(300 * time.Millisecond)
		}
	}
	p.b.run("set the endpoint active", chromedp.Navigate(page), chromedp.Click("#resume"), chromedp.WaitVisible("#pause"))

	acct, err := p.st.GetAccount(context.Background(), p.demo.AccountID)
	if err != nil {
		p.t.Fatal(err)
	}
	loc, err := time.LoadLocation(acct.TimeZone)
	if err != nil {
		p.t.Fatal(err)
	}
	since := fresh.CreatedAt.Add(-time.Minute).Truncate(time.Minute)
	var list struct{ Deliveries []apiDelivery }
	p.api("/v1/webhooks/"+endpoint+"/deliveries", &list)
	latest := map[string]string{}
	for _, d := range list.Deliveries { // newest first: the first of an event is its latest
		if _, seen := latest[d.EventID]; !seen && !d.CreatedAt.Before(since) {
			latest[d.EventID] = d.Status
		}
	}
	want := 0
	for _, status := range latest {
		if status == "failed" || status == "cancelled" {
			want++
		}
	}
	p.b.run("recover", chromedp.Navigate(page), chromedp.SetValue("#recover-since", since.In(loc).Format("2006-01-02T15:04")),
		chromedp.Click("#recover"), chromedp.WaitVisible("#notice"))
	notice := p.b.text("#notice")
	var n int
	if _, err := fmt.Sscanf(notice, "%d", &n); err != nil || n != want || want == 0 {
		p.t.Errorf("recovering since %s says %q; by the API's log %d events should be sent again", since, notice, want)
	}
	arrived := p.hooks.await(p.t, "the recovered "+fresh.Event, func(d delivered) bool { return d.ID == fresh.EventID })
	if arrived.Verified != nil {
		p.t.Errorf("the recovered delivery's signature did not verify: %v", arrived.Verified)
	}
	body := fmt.Sprintf(`{"since": %q}`, since.Format(time.RFC3339))
	req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/webhooks/"+endpoint+"/recover", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.demo.OwnerKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	var again struct{ Queued *int }
	_ = json.NewDecoder(resp.Body).Decode(&again)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || again.Queued == nil || *again.Queued != 0 {
		p.t.Errorf("the API's recover since the same time answered %d %+v, want 202 with nothing queued twice", resp.StatusCode, again)
	}

	// A time past the window is refused in the service's words, next to the field.
	p.b.run("recover since too long ago", chromedp.Navigate(page), chromedp.SetValue("#recover-since", "2000-01-01T00:00"),
		chromedp.Click("#recover"), chromedp.WaitVisible("#recover-error"))
	if got := p.b.text("#recover-error"); !strings.Contains(got, "within the last 30 days") {
		p.t.Errorf("recovering since 2000 says %q", got)
	}
	p.checkNarrow("recover refused", true)
}

// checkCatalogue opens the event catalogue and checks it against the API: the events are the
// ones GET /v1/webhooks offers and test, and the OpenAPI description's webhooks; each example
// names its event and has every property the description requires, and none it does not list.
func (p *portalTest) checkCatalogue() {
	p.t.Helper()
	p.b.run("open the event catalogue", chromedp.Navigate(p.base+"/portal/webhooks"), chromedp.Click("#event-catalogue"),
		chromedp.WaitVisible("section[data-event]"))
	type shownEvent struct{ Name, Example string }
	shown := value(p.b, "the catalogue", chromedp.Evaluate[[]shownEvent](`[...document.querySelectorAll("section[data-event]")].map(s => ({
		Name: s.dataset.event, Example: s.querySelector("pre.example").textContent}))`))
	var list struct{ Events []string }
	p.api("/v1/webhooks", &list)
	var names []string
	for _, e := range shown {
		names = append(names, e.Name)
	}
	if want := append(list.Events, "test"); !reflect.DeepEqual(names, want) {
		p.t.Errorf("the catalogue lists %v; GET /v1/webhooks offers %v and test", names, list.Events)
	}
	var doc struct {
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Required   []string
							Properties map[string]any
						}
					}
				}
			}
		}
	}
	p.api("/v1/openapi.json", &doc)
	if len(doc.Webhooks) != len(shown) {
		p.t.Errorf("the catalogue lists %d events; the OpenAPI description's webhooks are %d", len(shown), len(doc.Webhooks))
	}
	for _, e := range shown {
		schema := doc.Webhooks[e.Name].Post.RequestBody.Content["application/json"].Schema
		var body map[string]any
		if err := json.Unmarshal([]byte(e.Example), &body); err != nil {
			p.t.Errorf("the example of %s is not JSON: %v", e.Name, err)
			continue
		}
		if body["event"] != e.Name || len(schema.Required) == 0 {
			p.t.Errorf("the example of %s says event %v (the description requires %v)", e.Name, body["event"], schema.Required)
		}
		for _, k := range schema.Required {
			if _, ok := body[k]; !ok {
				p.t.Errorf("the example of %s lacks %q, which the description requires", e.Name, k)
			}
		}
		for k := range body {
			if _, ok := schema.Properties[k]; !ok {
				p.t.Errorf("the example of %s has %q, which the description does not list", e.Name, k)
			}
		}
	}
	p.checkNarrow("event catalogue", true)
}
