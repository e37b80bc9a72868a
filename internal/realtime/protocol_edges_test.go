package realtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/realtime"
)

func wsURL(r *replica, path string) string { return "ws" + strings.TrimPrefix(r.base, "http") + path }

func TestConnectionsRefusedWithTheProtocolsCloseCodes(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/app/wrong-key?protocol=7", realtime.CloseAppNotFound},
		{"/app/" + appKey, realtime.CloseNoProtocol},
		{"/app/" + appKey + "?protocol=3", realtime.CloseUnsupportedVersion},
		{"/app/" + appKey + "/extra?protocol=7", realtime.ClosePathNotFound},
	} {
		c, _, err := dial(t, wsURL(r, tc.path))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		code, seen := c.closeCode(5 * time.Second)
		if int(code) != tc.code || len(seen) != 1 || seen[0].Event != "pusher:error" {
			t.Errorf("%s: closed %d after %+v, want %d after a pusher:error", tc.path, code, seen, tc.code)
		}
	}
	// A plain HTTP request is not upgraded and is not a 500.
	resp, err := http.Get(r.base + "/app/" + appKey + "?protocol=7")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET without upgrade: %d", resp.StatusCode)
	}
}

func errorOf(t *testing.T, m message) (code *int, text string) {
	t.Helper()
	if m.Event != "pusher:error" {
		t.Fatalf("want pusher:error, got %+v", m)
	}
	var d struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &d); err != nil {
		t.Fatalf("pusher:error data: %s", m.Data)
	}
	return d.Code, d.Message
}

func TestBadMessagesGetPusherErrorsAndTheConnectionLives(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.a.OwnerKey)
	for _, bad := range [][]byte{
		[]byte("not json"),
		[]byte(`{"event":`),
		[]byte(`[]`),
		[]byte(`{"data":{}}`),
		[]byte(`{"event":"pusher:whatever","data":{}}`),
		[]byte(`{"event":"client-typing","channel":"private-account.x","data":{}}`),
		[]byte(`{"event":"pusher:subscribe","data":"not an object"}`),
		[]byte(`{"event":"pusher:subscribe","data":{}}`),
	} {
		c.send(bad)
		if code, _ := errorOf(t, c.read()); code != nil && *code != realtime.ErrorCodeUnauthorized {
			t.Fatalf("%s: code %d", bad, *code)
		}
	}
	c.send(map[string]any{"event": "pusher:ping", "data": map[string]any{}})
	if m := c.read(); m.Event != "pusher:pong" {
		t.Fatalf("ping answered %+v", m)
	}
	// Data sent as a JSON string (as some clients do) subscribes too.
	channel := realtime.AccountChannel(f.a.Account.PublicID)
	_, sig := r.authorize(t, f.a.OwnerKey, c.socketID, channel)
	data, _ := json.Marshal(map[string]string{"channel": channel, "auth": sig})
	c.send(map[string]any{"event": "pusher:subscribe", "data": string(data)})
	if m := c.read(); m.Event != "pusher_internal:subscription_succeeded" {
		t.Fatalf("subscribe: %+v", m)
	}
}

func TestTheAuthRoute(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	channel := realtime.AccountChannel(f.a.Account.PublicID)
	// JSON works as well as a form, and the signature is the Pusher one.
	resp := r.api.Do(t, f.a.OwnerKey, http.MethodPost, "/v1/realtime/auth", map[string]string{"socket_id": "123.456", "channel_name": channel})
	want := realtime.Signer{Key: appKey, Secret: secret}.Sign("123.456", channel)
	if resp.Status != http.StatusOK || resp.Map(t)["auth"] != want {
		t.Fatalf("JSON auth: %s", resp)
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]string{"socket_id": "123", "channel_name": channel}, "socket_id"},
		{map[string]string{"socket_id": "abc.def", "channel_name": channel}, "socket_id"},
		{map[string]string{"channel_name": channel}, "socket_id"},
		{map[string]string{"socket_id": "1.2", "channel_name": "private account"}, "channel_name"},
		{map[string]string{"socket_id": "1.2", "channel_name": strings.Repeat("a", 165)}, "channel_name"},
		{map[string]any{"socket_id": 12, "channel_name": channel}, "socket_id"},
	} {
		resp := r.api.Do(t, f.a.OwnerKey, http.MethodPost, "/v1/realtime/auth", tc.body)
		if resp.Status != http.StatusUnprocessableEntity || !strings.Contains(string(resp.Body), `"`+tc.field+`"`) {
			t.Errorf("%v: %s", tc.body, resp)
		}
	}
	if resp := r.api.Do(t, f.a.OwnerKey, http.MethodPost, "/v1/realtime/auth", "{"); resp.Status != http.StatusBadRequest {
		t.Errorf("bad JSON: %s", resp)
	}
	if status, _ := r.authorize(t, f.a.OwnerKey, "1.2", realtime.AccountChannel(f.b.Account.PublicID)); status != http.StatusForbidden {
		t.Errorf("another account's channel: %d", status)
	}
	if status, _ := r.authorize(t, "sbk_wrong", "1.2", channel); status != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", status)
	}
	// The Integrations gate, with its reason.
	starter := newTenant(t, f, "starter")
	resp = r.api.Do(t, starter, http.MethodPost, "/v1/realtime/auth", map[string]string{"socket_id": "1.2", "channel_name": channel})
	if resp.Status != http.StatusForbidden || resp.Map(t)["reason"] != "plan_required" {
		t.Errorf("starter plan: %s", resp)
	}
}

func TestIdleConnectionsArePingedThenClosed(t *testing.T) {
	f := newFixture(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC))
	r := newReplica(t, f.dbURL, f.st, options{clock: clk})
	c, _, err := dial(t, wsURL(r, "/app/"+appKey+"?protocol=7"))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.read(); m.Event != "pusher:connection_established" {
		t.Fatal(m)
	}
	step := func(d time.Duration) {
		// The sweeper ticks each second of fake time.
		for i := time.Duration(0); i < d; i += time.Second {
			clk.Step(time.Second)
		}
	}
	step(119 * time.Second)
	if m, err := c.tryRead(200 * time.Millisecond); err == nil {
		t.Fatalf("before the activity timeout: %+v", m)
	}
	step(2 * time.Second)
	if m := c.read(); m.Event != "pusher:ping" {
		t.Fatalf("after the activity timeout: %+v", m)
	}
	step(31 * time.Second)
	if code, _ := c.closeCode(5 * time.Second); code != realtime.ClosePongTimeout {
		t.Fatalf("closed with %d, want 4201", code)
	}
}

func TestLimits(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{limits: realtime.Limits{ConnectionsPerAccount: 2, MessagesPerSecond: 1, MessageBurst: 5,
		SubscriptionsPerMinute: 3}})
	// Message rate: a burst past the limit closes with 4301.
	flood := r.connect(t, f.a.OwnerKey)
	for range 8 {
		// The server may close before the last ones are written.
		_ = flood.ws.Write(context.Background(), websocket.MessageText, []byte(`{"event":"pusher:ping","data":{}}`))
	}
	if code, _ := flood.closeCode(5 * time.Second); code != realtime.CloseRateLimited {
		t.Fatalf("flood closed with %d", code)
	}
	// Subscription attempts: the fourth in a minute is refused with 4301.
	c := r.connect(t, f.a.OwnerKey)
	for i := range 4 {
		c.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": "private-account.nope", "auth": "x:y"}})
		code, _ := errorOf(t, c.read())
		if i < 3 {
			if code == nil || *code != realtime.ErrorCodeUnauthorized {
				t.Fatalf("attempt %d: %v", i, code)
			}
			c.read() // pusher:subscription_error
		} else if code == nil || *code != realtime.ErrorCodeRateLimited {
			t.Fatalf("attempt %d: %v", i, code)
		}
	}
	// Connections per account: the third subscriber is over quota.
	for i := range 3 {
		s := r.connect(t, f.a.OwnerKey)
		channel := realtime.AccountChannel(f.a.Account.PublicID)
		_, sig := r.authorize(t, f.a.OwnerKey, s.socketID, channel)
		s.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": channel, "auth": sig}})
		m := s.read()
		if i < 2 && m.Event != "pusher_internal:subscription_succeeded" {
			t.Fatalf("subscriber %d: %+v", i, m)
		}
		if i == 2 {
			if code, _ := errorOf(t, m); code == nil || *code != realtime.CloseOverQuota {
				t.Fatalf("third subscriber: %+v", m)
			}
			if code, _ := s.closeCode(5 * time.Second); code != realtime.CloseOverQuota {
				t.Fatalf("third subscriber closed with %d", code)
			}
		}
	}
	if n := r.hub.Subscribers(f.a.Account.ID); n != 2 {
		t.Fatalf("%d subscribers", n)
	}
}

func TestServerShutdownAsksClientsToReconnect(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.a.OwnerKey)
	r.subscribe(t, c, f.a.OwnerKey, f.a)
	r.stop()
	if code, _ := c.closeCode(5 * time.Second); code != realtime.CloseReconnect {
		t.Fatalf("closed with %d, want 4200", code)
	}
}

func TestWebSocketLevelRules(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	// A plain request is told to upgrade, in the API's error shape.
	resp, err := http.Get(r.base + "/app/" + appKey + "?protocol=7")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Message string `json:"message"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" || body.Message == "" {
		t.Fatalf("GET without upgrade: %d %v %+v", resp.StatusCode, resp.Header, body)
	}
	// A message over the protocol's 10 KB closes the socket with 1009.
	big := r.connect(t, f.a.OwnerKey)
	big.ws.SetReadLimit(1 << 20)
	_ = big.ws.Write(context.Background(), websocket.MessageText, []byte(`{"event":"pusher:ping","data":"`+strings.Repeat("x", 11<<10)+`"}`))
	if code, _ := big.closeCode(5 * time.Second); code != websocket.StatusMessageTooBig {
		t.Fatalf("a 11 KB message: closed with %d, want 1009", code)
	}
	// Text that is not UTF-8 closes it with 1007.
	notUTF8 := r.connect(t, f.a.OwnerKey)
	_ = notUTF8.ws.Write(context.Background(), websocket.MessageText, []byte("{\"event\":\"\xff\"}"))
	if code, _ := notUTF8.closeCode(5 * time.Second); code != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("text that is not UTF-8: closed with %d, want 1007", code)
	}
	// A message in fragments is one message; a WebSocket ping between them is answered.
	c := r.connect(t, f.a.OwnerKey)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w, err := c.ws.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte(`{"event":"pusher:`))
	if err := c.ws.Ping(ctx); err != nil {
		t.Fatalf("WebSocket ping: %v", err)
	}
	_, _ = w.Write([]byte(`ping","data":{}}`))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if m := c.read(); m.Event != "pusher:pong" {
		t.Fatalf("a fragmented ping answered %+v", m)
	}
	// The client's close is answered with the same code, and the hub lets the socket go.
	if err := c.ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.hub.Connections() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.hub.Connections(); n > 0 {
		t.Fatalf("%d connections after the client closed", n)
	}
}
