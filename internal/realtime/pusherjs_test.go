package realtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// pusherLine is one line hack/pusher-listen.js prints.
type pusherLine struct {
	Type    string         `json:"type"`
	State   string         `json:"state"`
	Event   string         `json:"event"`
	Channel string         `json:"channel"`
	Data    map[string]any `json:"data"`
	Error   any            `json:"error"`
}

// startPusherJS runs the stock pusher-js client against base with key; it skips the test
// where Node is not installed.
func startPusherJS(t *testing.T, base, key string) <-chan pusherLine {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the pusher-js conformance test needs Node.js and npm (apt-get install nodejs npm)")
	}
	out, err := exec.Command("../../hack/ensure-pusher-js.sh").Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 3 {
		t.Skip("npm is not installed: the pusher-js conformance test needs it")
	}
	if err != nil {
		t.Fatalf("install pusher-js: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", "../../hack/pusher-listen.js")
	cmd.Env = append(os.Environ(), "NODE_PATH="+strings.TrimSpace(string(out)), "SWITCHBOARD_API="+base, "SWITCHBOARD_KEY="+key)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan pusherLine, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l pusherLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("pusher-listen.js printed %q", sc.Text())
				continue
			}
			lines <- l
		}
	}()
	return lines
}

// waitFor reads lines until one satisfies ok.
func waitFor(t *testing.T, lines <-chan pusherLine, wait time.Duration, what string, ok func(pusherLine) bool) pusherLine {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case l, open := <-lines:
			if !open {
				t.Fatalf("pusher-js exited while waiting for %s", what)
			}
			if l.Type == "error" {
				t.Logf("pusher-js error: %v", l.Error)
			}
			if ok(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("pusher-js: no %s within %s", what, wait)
		}
	}
}

func TestPusherJSReceivesEveryEventKindAndReconnectsAfterARestart(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{addr: "127.0.0.1:0"})
	addr := strings.TrimPrefix(r.base, "http://")
	lines := startPusherJS(t, r.base, f.a.OwnerKey)
	waitFor(t, lines, 30*time.Second, "subscription", func(l pusherLine) bool { return l.Type == "subscribed" })

	started := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	call := map[string]any{"platform_ref": "js-1", "to": f.numberA, "from": "+447700900123", "started_at": started}
	f.report(t, "/platform/v1/call-progress", with(call, "state", "ringing"), 200)
	f.report(t, "/platform/v1/call-progress", with(call, "state", "answered"), 200)
	ended := f.report(t, "/platform/v1/calls", with(with(with(call, "disposition", "answered"), "duration_seconds", 60), "talk_seconds", 50), 200)
	f.report(t, "/platform/v1/calls", map[string]any{"platform_ref": "js-2", "to": f.numberA, "from": "+447700900126",
		"disposition": "voicemail", "started_at": started, "duration_seconds": 30,
		"recording": map[string]any{"kind": "voicemail", "audio_base64": "UklGRg==", "duration_seconds": 20}}, 200)
	f.report(t, "/platform/v1/texts", map[string]any{"to": f.numberA, "from": "+447700900124", "body": "hello", "received_at": started}, 200)
	f.report(t, "/platform/v1/message-slips", map[string]any{"to": f.numberA, "from": "+447700900125", "caller_name": "Pat",
		"department": "Sales", "received_at": started}, 200)
	ctx := context.Background()
	if _, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.a.Account.ID, Text: "Ring Pat back"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.CreateNotification(ctx, store.NewNotification{AccountID: f.a.Account.ID, UserID: f.a.Owner.ID, Type: "info", Title: "t"}); err != nil {
		t.Fatal(err)
	}
	// transcript.ready goes through the outbox like every event.
	stored, err := f.st.GetCall(ctx, f.a.Account.ID, ended["call_public_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	ready, err := events.ForCall(events.Links{APIBaseURL: "https://api.example", DashboardURL: "https://app.example"},
		events.TranscriptReady, events.CallFacts{AccountID: f.a.Account.ID, CallID: stored.ID, AccountName: f.a.Account.Name,
			Call: events.PayloadCall{ID: stored.PublicID, StartedAt: stored.StartedAt}}, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	err = f.st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.EnqueueEvents(ctx, []events.Event{ready})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"call.ringing": true, "call.answered": true, "call.ended": true, "voicemail.received": true,
		"text.received": true, "message_slip.received": true, "todo.created": true, "notification.created": true, "transcript.ready": true}
	var order []string
	for len(want) > 0 {
		l := waitFor(t, lines, 20*time.Second, "events "+strings.Join(keys(want), ", "), func(l pusherLine) bool { return l.Type == "event" })
		order = append(order, l.Event)
		if l.Data["event"] != l.Event {
			t.Errorf("%s carries event %v", l.Event, l.Data["event"])
		}
		if l.Event == "call.ringing" || l.Event == "call.answered" {
			if l.Data["call"].(map[string]any)["id"] != ended["call_public_id"] {
				t.Errorf("%s names call %v, the call is %v", l.Event, l.Data["call"], ended["call_public_id"])
			}
		}
		delete(want, l.Event)
	}
	if strings.Join(order[:3], ",") != "call.ringing,call.answered,call.ended" {
		t.Errorf("order %v", order)
	}

	// The server restarts on the same address: pusher-js reconnects and subscribes again.
	r.stop()
	r.srv.Close()
	waitFor(t, lines, 10*time.Second, "a reconnect", func(l pusherLine) bool { return l.Type == "state" && l.State != "connected" })
	again := newReplica(t, f.dbURL, f.st, options{addr: addr})
	waitFor(t, lines, 60*time.Second, "a new subscription", func(l pusherLine) bool { return l.Type == "subscribed" })
	t.Logf("after the restart: %d connections, %d subscribers", again.hub.Connections(), again.hub.Subscribers(f.a.Account.ID))
	f.report(t, "/platform/v1/texts", map[string]any{"to": f.numberA, "from": "+447700900127", "body": "again", "received_at": started}, 200)
	l := waitFor(t, lines, 20*time.Second, "an event after the restart", func(l pusherLine) bool { return l.Type == "event" })
	if l.Event != "text.received" {
		t.Fatalf("after the restart: %+v", l)
	}
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
