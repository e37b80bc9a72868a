package portal_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/serve"
)

// answer is what a scripted receiver answers to one request.
type answer struct {
	status int
	body   string
}

// scriptedReceiver is a real HTTPS receiver that answers its requests in turn from a script
// (the last answer repeats) and notes each request's X-Service-Timestamp.
type scriptedReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	script []answer
	sentAt []int64
}

func startScriptedReceiver(t *testing.T, script ...answer) *scriptedReceiver {
	rc := &scriptedReceiver{script: script}
	// httptest's TLS servers share one certificate, the one the service trusts (startPortalWith).
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts, _ := strconv.ParseInt(r.Header.Get("X-Service-Timestamp"), 10, 64)
		rc.mu.Lock()
		a := rc.script[min(len(rc.sentAt), len(rc.script)-1)]
		rc.sentAt = append(rc.sentAt, ts)
		rc.mu.Unlock()
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// await waits until the receiver has had n requests and returns their timestamps.
func (rc *scriptedReceiver) await(t *testing.T, n int) []int64 {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		got := append([]int64(nil), rc.sentAt...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the receiver did not get %d requests within 90 s", n)
	return nil
}

// shownAttempt is an attempt as the delivery page shows it.
type shownAttempt struct {
	Number, Sent, Code, Error, Duration, Next, Body string
}

// A receiver fails twice, then answers: the delivery page lists the three attempts, each
// with its time, code, error, duration, the answer's body and when the next one was due, and
// the API's deliveries list agrees on the count and the last code. The service runs on a
// fake clock, moved past each retry's time and otherwise still.
func TestPortalShowsEveryAttemptOfADelivery(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	p := startPortalWith(t, 5, func(o *serve.Options) {
		o.Clock = clk
		o.Webhooks.MaxRequeue = 100 * time.Millisecond
	})
	flaky := startScriptedReceiver(t,
		answer{http.StatusServiceUnavailable, "down for maintenance"},
		answer{http.StatusInternalServerError, `{"error":"still starting"}`},
		answer{http.StatusOK, "thanks"})
	p.signIn(p.demo.OwnerEmail)
	p.b.run("add an endpoint", chromedp.Navigate(p.base+"/portal/webhooks"),
		chromedp.SendKeys("#endpoint-name", "Flaky"), chromedp.SendKeys("#endpoint-url", flaky.srv.URL+"/hooks"),
		chromedp.Click(`input[name=event][value="call.ended"]`), chromedp.Click("#add-endpoint"), chromedp.WaitVisible("#secret-value"))
	endpoint := value(p.b, "the endpoint's id", chromedp.Evaluate[string](`document.getElementById("endpoint").dataset.endpoint`))
	page := p.base + "/portal/webhooks/" + endpoint

	// The clock moves only here, a second at a time, so the replica's fleet heartbeats (every
	// 2 s of the clock, lost after 10 s) keep up and its outbox dispatcher may claim.
	advance := func(d time.Duration) {
		for range int(d / time.Second) {
			clk.Step(time.Second)
			time.Sleep(50 * time.Millisecond)
		}
	}
	advance(3 * time.Second)
	p.b.run("send a test event", chromedp.Navigate(page), chromedp.Click("#send-test"), chromedp.WaitVisible("#notice"))
	flaky.await(t, 1)
	p.awaitRow(page, `tr[data-event][data-status="retrying"]`, "the test delivery retrying after its first attempt")
	advance(time.Minute)
	flaky.await(t, 2)
	advance(5 * time.Minute)
	sent := flaky.await(t, 3)
	p.awaitRow(page, `tr[data-event][data-status="succeeded"]`, "the test delivery succeeded at its third attempt")
	eventID := value(p.b, "the delivery's event", chromedp.Evaluate[string](`document.querySelector('tr[data-status="succeeded"]').dataset.event`))

	p.b.run("open the delivery page", chromedp.Click(fmt.Sprintf(`tr[data-event=%q] a.event-link`, eventID)), chromedp.WaitVisible("#payload"))
	shown := value(p.b, "the attempts shown", chromedp.Evaluate[[]shownAttempt](`[...document.querySelectorAll("li.attempt")].map(li => ({
		Number: li.dataset.attempt, Sent: li.querySelector(".lead").textContent, Code: li.querySelector(".attempt-code").textContent,
		Error: li.querySelector(".attempt-error").textContent, Duration: li.querySelector(".attempt-duration").textContent,
		Next: li.querySelector(".attempt-next").textContent, Body: (li.querySelector(".attempt-body") || {}).textContent || ""}))`))
	at := func(i int) string { return time.Unix(sent[i], 0).UTC().Format("2 Jan 2006 15:04:05 UTC") }
	want := []shownAttempt{
		{Number: "1", Sent: "Attempt 1, sent " + at(0), Code: "503", Error: "HTTP 503: the endpoint did not answer with a 2xx status",
			Next: at(1), Body: "down for maintenance"},
		{Number: "2", Sent: "Attempt 2, sent " + at(1), Code: "500", Error: "HTTP 500: the endpoint did not answer with a 2xx status",
			Next: at(2), Body: `{"error":"still starting"}`},
		{Number: "3", Sent: "Attempt 3, sent " + at(2), Code: "200", Error: "none", Next: "none", Body: "thanks"},
	}
	for i := range shown {
		// The fake clock stands still during an attempt: its duration is kept, and reads 0s.
		if shown[i].Duration != "0s" {
			t.Errorf("attempt %d took %q; want 0s on a clock that stands still", i+1, shown[i].Duration)
		}
		shown[i].Duration = ""
	}
	if !reflect.DeepEqual(shown, want) {
		t.Errorf("the delivery page shows the attempts\n%+v\nwant\n%+v", shown, want)
	}
	// Each retry came when the attempt before it said it would: 1 and 5 minutes later.
	if sent[1]-sent[0] != 60 || sent[2]-sent[1] != 300 {
		t.Errorf("attempts sent at %v; want 1 minute, then 5 minutes apart", sent)
	}

	var list struct{ Deliveries []apiDelivery }
	p.api("/v1/webhooks/"+endpoint+"/deliveries", &list)
	var found bool
	for _, d := range list.Deliveries {
		if d.EventID == eventID {
			found = true
			if d.Status != "succeeded" || d.Attempts != len(shown) || d.ResponseCode != 200 {
				t.Errorf("the API lists the delivery as %+v; the page shows %d attempts, the last answered 200", d, len(shown))
			}
		}
	}
	if !found {
		t.Errorf("the API does not list the event %s", eventID)
	}
	if strings.Contains(p.b.text("#event-deliveries"), "not each attempt") {
		t.Error("the page still says attempts are not kept")
	}
	p.checkNarrow("delivery attempts", true)
}
