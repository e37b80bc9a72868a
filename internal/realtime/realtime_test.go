package realtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/realtime"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServeEnv) != "" {
		benchServe() // the benchmark's server process
		return
	}
	if os.Getenv(benchClientsEnv) != "" {
		benchClients() // the benchmark's client process
		return
	}
	os.Exit(storetest.Main(m))
}

const (
	appKey        = "app-key-for-tests"
	platformToken = "platform-token-for-tests"
)

var secret = []byte("a realtime secret for the tests!")

// replica is one API process: the public API with the live channel, and its hub.
type replica struct {
	hub  *realtime.Hub
	api  *apitest.API
	base string
	stop context.CancelFunc
	srv  *httptest.Server
}

type options struct {
	addr   string // listen here (to restart a replica on its address); default any free port
	clock  clock.WithTicker
	limits realtime.Limits
}

func newReplica(t *testing.T, dbURL string, st *store.Store, o options) *replica {
	t.Helper()
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	signer := realtime.Signer{Key: appKey, Secret: secret}
	hub := realtime.NewHub(realtime.Config{Signer: signer, Store: st, DatabaseURL: dbURL, Clock: o.clock, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
		Limits: o.limits, ActivityTimeout: 120 * time.Second, PongTimeout: 30 * time.Second})
	srv := httptest.NewUnstartedServer(nil)
	if o.addr != "" {
		_ = srv.Listener.Close()
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = ln
	}
	base := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: base, Clock: o.clock, Log: logr.Discard()}, st,
		apiserver.Realtime(apiserver.RealtimeConfig{Signer: signer, Sockets: hub}))
	// The server's own timeouts must not cut sockets (they set their own deadlines).
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 2*time.Second, 2*time.Second
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Start(ctx) }()
	r := &replica{hub: hub, api: apitest.New(base), base: base, srv: srv}
	r.stop = func() { cancel(); <-done }
	t.Cleanup(func() { r.stop(); srv.Close() })
	return r
}

type fixture struct {
	st       *store.Store
	dbURL    string
	platform string
	a, b     apitest.Tenant
	numberA  string
	numberB  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dbURL: storetest.NewDatabaseURL(t)}
	f.st = storetest.Open(t, f.dbURL)
	f.a = apitest.NewTenant(t, f.st, plans.Business)
	f.b = apitest.NewTenant(t, f.st, plans.Business)
	for i, n := range []struct {
		tenant apitest.Tenant
		e164   string
		dst    *string
	}{{f.a, "+442079460101", &f.numberA}, {f.b, "+442079460202", &f.numberB}} {
		if _, err := f.st.CreateNumber(context.Background(), store.NewNumber{AccountID: n.tenant.Account.ID, E164: n.e164,
			Label: "Line " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		*n.dst = n.e164
	}
	recordings, err := recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = recordings.Close() })
	h := ingest.New(ingest.Config{Token: platformToken, Recordings: recordings, LinkSigningKey: []byte("a link signing key of 32 bytes!!"),
		Links: events.Links{APIBaseURL: "https://api.example", DashboardURL: "https://app.example"}, Log: logr.Discard()}, f.st)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.platform = srv.URL
	return f
}

// report posts a platform report and fails the test unless it is answered with want.
func (f *fixture) report(t *testing.T, path string, body any, want int) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.platform+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+platformToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want && (want != http.StatusOK || resp.StatusCode/100 != 2) {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, data, want)
	}
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

// client is a raw protocol client. A reader goroutine feeds frames (coder/websocket closes a
// connection whose Read context ends, so reads are never given a deadline).
type client struct {
	t        *testing.T
	ws       *websocket.Conn
	socketID string
	frames   chan []byte
	readErr  error // set before frames is closed
}

func dial(t *testing.T, wsURL string) (*client, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return nil, resp, err
	}
	c := &client{t: t, ws: ws, frames: make(chan []byte, 1024)}
	t.Cleanup(func() { _ = ws.CloseNow() })
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				c.readErr = err
				close(c.frames)
				return
			}
			c.frames <- b
		}
	}()
	return c, resp, nil
}

// connect opens a socket where GET /me says, and reads connection_established.
func (r *replica) connect(t *testing.T, key string) *client {
	t.Helper()
	var me apiserver.Me
	r.api.Do(t, key, http.MethodGet, "/v1/me", nil).JSON(t, &me)
	rt := me.Realtime
	if !rt.Enabled || rt.Key != appKey || rt.Scheme != "ws" {
		t.Fatalf("GET /me realtime = %+v", rt)
	}
	c, _, err := dial(t, fmt.Sprintf("%s://%s:%d/app/%s?protocol=7&client=js&version=8.4.0", rt.Scheme, rt.Host, rt.Port, rt.Key))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	m := c.read()
	if m.Event != "pusher:connection_established" {
		t.Fatalf("first message %+v", m)
	}
	var d struct {
		SocketID        string `json:"socket_id"`
		ActivityTimeout int    `json:"activity_timeout"`
	}
	m.decode(t, &d)
	if !realtime.ValidSocketID(d.SocketID) || d.ActivityTimeout != 120 {
		t.Fatalf("connection_established data %+v", d)
	}
	c.socketID = d.SocketID
	return c
}

type message struct {
	Event   string          `json:"event"`
	Channel string          `json:"channel"`
	Data    json.RawMessage `json:"data"`
}

// decode reads data, which the protocol sends as a JSON string holding JSON.
func (m message) decode(t *testing.T, dst any) {
	t.Helper()
	var s string
	if err := json.Unmarshal(m.Data, &s); err != nil {
		t.Fatalf("data of %s is not a string: %s", m.Event, m.Data)
	}
	if err := json.Unmarshal([]byte(s), dst); err != nil {
		t.Fatalf("data of %s: %v", m.Event, err)
	}
}

func (c *client) read() message {
	c.t.Helper()
	m, err := c.tryRead(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

func (c *client) tryRead(wait time.Duration) (message, error) {
	var b []byte
	select {
	case frame, ok := <-c.frames:
		if !ok {
			return message{}, c.readErr
		}
		b = frame
	case <-time.After(wait):
		return message{}, errTimeout
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("server sent non-JSON %q", b)
	}
	return m, nil
}

func (c *client) send(v any) {
	c.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		b, _ = json.Marshal(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

var errTimeout = errors.New("no message in time")

// closeCode waits for the server to close the connection and returns its code.
func (c *client) closeCode(wait time.Duration) (websocket.StatusCode, []message) {
	c.t.Helper()
	var seen []message
	deadline := time.Now().Add(wait)
	for {
		m, err := c.tryRead(time.Until(deadline))
		if err != nil {
			if errors.Is(err, errTimeout) {
				c.t.Fatalf("connection still open after %s (seen %+v)", wait, seen)
			}
			code := websocket.CloseStatus(err)
			if code == -1 {
				c.t.Fatalf("connection not closed with a code: %v (seen %+v)", err, seen)
			}
			return code, seen
		}
		seen = append(seen, m)
	}
}

// authorize asks POST /v1/realtime/auth for a signature, as pusher-js does (a form).
func (r *replica) authorize(t *testing.T, key, socketID, channel string) (int, string) {
	t.Helper()
	status, sig, _ := r.authorizeWith(t, key, socketID, channel, nil)
	return status, sig
}

// authorizeWith is authorize with extra request headers; it also answers the response's.
func (r *replica) authorizeWith(t *testing.T, key, socketID, channel string, extra http.Header) (int, string, http.Header) {
	t.Helper()
	form := url.Values{"socket_id": {socketID}, "channel_name": {channel}}.Encode()
	req, _ := http.NewRequest(http.MethodPost, r.base+"/v1/realtime/auth", strings.NewReader(form))
	for name, values := range extra {
		req.Header[name] = values
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Auth string `json:"auth"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Auth, resp.Header
}

// subscribe authorises and subscribes c to the key's account channel.
func (r *replica) subscribe(t *testing.T, c *client, key string, tenant apitest.Tenant) string {
	t.Helper()
	channel := realtime.AccountChannel(tenant.Account.PublicID)
	status, sig := r.authorize(t, key, c.socketID, channel)
	if status != http.StatusOK {
		t.Fatalf("auth: %d", status)
	}
	c.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": channel, "auth": sig}})
	if m := c.read(); m.Event != "pusher_internal:subscription_succeeded" || m.Channel != channel {
		t.Fatalf("subscribe answered %+v", m)
	}
	return channel
}

// expectEvent reads until an event that is not a protocol message and checks its name.
func (c *client) expectEvent(event, channel string) map[string]any {
	c.t.Helper()
	m := c.read()
	if m.Event != event || m.Channel != channel {
		c.t.Fatalf("got %s on %q, want %s on %q: %s", m.Event, m.Channel, event, channel, m.Data)
	}
	var d map[string]any
	m.decode(c.t, &d)
	return d
}

func TestEventsReachTheAccountChannelFromPlatformReports(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.a.OwnerKey)
	channel := r.subscribe(t, c, f.a.OwnerKey, f.a)

	started := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	ringing := f.report(t, "/platform/v1/call-progress", map[string]any{"platform_ref": "p-1", "state": "ringing",
		"to": f.numberA, "from": "+447700900123", "started_at": started}, http.StatusOK)
	again := f.report(t, "/platform/v1/call-progress", map[string]any{"platform_ref": "p-1", "state": "ringing",
		"to": f.numberA, "from": "+447700900123", "started_at": started}, http.StatusOK)
	if again["duplicate"] != true || again["call_public_id"] != ringing["call_public_id"] {
		t.Fatalf("a repeated ringing report: %v (first %v)", again, ringing)
	}
	f.report(t, "/platform/v1/call-progress", map[string]any{"platform_ref": "p-1", "state": "answered",
		"to": f.numberA, "from": "+447700900123", "started_at": started, "answer": map[string]any{"staff_member": "Sam"}}, http.StatusOK)
	ended := f.report(t, "/platform/v1/calls", map[string]any{"platform_ref": "p-1", "to": f.numberA, "from": "+447700900123",
		"disposition": "answered", "started_at": started, "duration_seconds": 60, "talk_seconds": 50}, http.StatusOK)
	f.report(t, "/platform/v1/call-progress", map[string]any{"platform_ref": "p-1", "state": "answered",
		"to": f.numberA, "from": "+447700900123", "started_at": started}, http.StatusConflict)
	callID := ringing["call_public_id"]
	if ended["call_public_id"] != callID {
		t.Fatalf("the final report named call %v, progress reports %v", ended["call_public_id"], callID)
	}

	d := c.expectEvent("call.ringing", channel)
	call := d["call"].(map[string]any)
	if call["id"] != callID || call["from"] != "+447700900123" || call["disposition"] != "in-progress" || d["number"].(map[string]any)["e164"] != f.numberA {
		t.Fatalf("call.ringing: %v", d)
	}
	d = c.expectEvent("call.answered", channel)
	if d["answer"].(map[string]any)["staff_member"] != "Sam" || d["answer"].(map[string]any)["answered"] != true {
		t.Fatalf("call.answered: %v", d)
	}
	d = c.expectEvent("call.ended", channel)
	if d["call"].(map[string]any)["id"] != callID || d["event"] != "call.ended" {
		t.Fatalf("call.ended: %v", d)
	}

	f.report(t, "/platform/v1/texts", map[string]any{"to": f.numberA, "from": "+447700900124", "body": "secret words",
		"received_at": started}, http.StatusOK)
	d = c.expectEvent("text.received", channel)
	if d["message"].(map[string]any)["from_e164"] != "+447700900124" {
		t.Fatalf("text.received: %v", d)
	}
	f.report(t, "/platform/v1/message-slips", map[string]any{"to": f.numberA, "from": "+447700900125", "caller_name": "Pat",
		"department": "Sales", "received_at": started}, http.StatusOK)
	d = c.expectEvent("message_slip.received", channel)
	if d["message_slip"].(map[string]any)["caller_name"] != "Pat" {
		t.Fatalf("message_slip.received: %v", d)
	}
	ctx := context.Background()
	task, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.a.Account.ID, Text: "Ring Pat back"})
	if err != nil {
		t.Fatal(err)
	}
	d = c.expectEvent("todo.created", channel)
	if d["todo"].(map[string]any)["public_id"] != task.PublicID {
		t.Fatalf("todo.created: %v", d)
	}
	n, err := f.st.CreateNotification(ctx, store.NewNotification{AccountID: f.a.Account.ID, UserID: f.a.Owner.ID, Type: "info",
		Title: "private title", Body: "private body"})
	if err != nil {
		t.Fatal(err)
	}
	raw := c.read()
	if raw.Event != "notification.created" || strings.Contains(string(raw.Data), "private") || !strings.Contains(string(raw.Data), n.ID) {
		t.Fatalf("notification.created: %+v", raw)
	}
	// A voicemail announces call.ended and voicemail.received; the text body never travels.
	f.report(t, "/platform/v1/calls", map[string]any{"platform_ref": "p-2", "to": f.numberA, "from": "+447700900126",
		"disposition": "voicemail", "started_at": started, "duration_seconds": 30,
		"recording": map[string]any{"kind": "voicemail", "audio_base64": "UklGRg==", "duration_seconds": 20}}, http.StatusOK)
	c.expectEvent("call.ended", channel)
	d = c.expectEvent("voicemail.received", channel)
	if d["links"].(map[string]any)["recording_api"] == nil {
		t.Fatalf("voicemail.received: %v", d)
	}
	if _, err := c.tryRead(300 * time.Millisecond); err == nil {
		t.Fatal("an unexpected extra message")
	}
}

func TestAnEventOnOneReplicaReachesSubscribersOfTheOther(t *testing.T) {
	f := newFixture(t)
	one := newReplica(t, f.dbURL, f.st, options{})
	two := newReplica(t, f.dbURL, f.st, options{})
	onTwo := two.connect(t, f.a.OwnerKey)
	channel := two.subscribe(t, onTwo, f.a.OwnerKey, f.a)
	onOne := one.connect(t, f.a.OwnerKey)
	one.subscribe(t, onOne, f.a.OwnerKey, f.a)
	// B's subscriber on replica one.
	bOnOne := one.connect(t, f.b.OwnerKey)
	bChannel := one.subscribe(t, bOnOne, f.b.OwnerKey, f.b)

	if _, err := f.st.CreateTask(context.Background(), store.NewTask{AccountID: f.a.Account.ID, Text: "A's to-do"}); err != nil {
		t.Fatal(err)
	}
	onTwo.expectEvent("todo.created", channel)
	onOne.expectEvent("todo.created", channel)
	if m, err := bOnOne.tryRead(500 * time.Millisecond); err == nil {
		t.Fatalf("B's subscriber got %+v", m)
	}
	if _, err := f.st.CreateTask(context.Background(), store.NewTask{AccountID: f.b.Account.ID, Text: "B's to-do"}); err != nil {
		t.Fatal(err)
	}
	bOnOne.expectEvent("todo.created", bChannel)
}

func TestNothingIsPublishedUntilTheTransactionCommits(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.a.OwnerKey)
	channel := r.subscribe(t, c, f.a.OwnerKey, f.a)
	ctx := context.Background()
	tx, err := storetest.SQL(t, f.st).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tasks (account_id, public_id, text) VALUES ($1, 'task_rolledback', 'x')`, f.a.Account.ID); err != nil {
		t.Fatal(err)
	}
	if m, err := c.tryRead(300 * time.Millisecond); err == nil {
		t.Fatalf("published before commit: %+v", m)
	}
	_ = tx.Rollback(ctx)
	if m, err := c.tryRead(300 * time.Millisecond); err == nil {
		t.Fatalf("published a rolled-back change: %+v", m)
	}
	if _, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.a.Account.ID, Text: "committed"}); err != nil {
		t.Fatal(err)
	}
	if d := c.expectEvent("todo.created", channel); d["todo"].(map[string]any)["text"] != "committed" {
		t.Fatalf("got %v", d)
	}
}

// POST /v1/realtime/auth takes no Idempotency-Key (docs/api-decisions.md): a repeat with the
// same key is not replayed but records the grant again, so a client that subscribed (which
// consumes the grant) and asks again can subscribe again.
func TestAuthIgnoresIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.a.OwnerKey)
	channel := realtime.AccountChannel(f.a.Account.PublicID)
	sameKey := http.Header{"Idempotency-Key": {"realtime-auth-1"}}
	var first string
	for try := range 2 {
		status, sig, h := r.authorizeWith(t, f.a.OwnerKey, c.socketID, channel, sameKey)
		if status != http.StatusOK || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("auth %d with an Idempotency-Key: %d, Idempotent-Replayed %q", try+1, status, h.Get("Idempotent-Replayed"))
		}
		if try == 0 {
			first = sig
		} else if sig != first {
			t.Fatalf("the repeat signed %q, the first %q", sig, first)
		}
		c.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": channel, "auth": sig}})
		if m := c.read(); m.Event != "pusher_internal:subscription_succeeded" || m.Channel != channel {
			t.Fatalf("subscribe after auth %d: %+v", try+1, m)
		}
		c.send(map[string]any{"event": "pusher:unsubscribe", "data": map[string]string{"channel": channel}})
	}
	// A key an idempotent route refuses (422) is not even read here.
	if status, _, _ := r.authorizeWith(t, f.a.OwnerKey, c.socketID, channel, http.Header{"Idempotency-Key": {""}}); status != http.StatusOK {
		t.Fatalf("auth with an empty Idempotency-Key: %d", status)
	}
}

func TestSubscribersOfOneAccountNeverGetAnother(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	c := r.connect(t, f.b.OwnerKey)
	aChannel := realtime.AccountChannel(f.a.Account.PublicID)

	// B's key may not sign A's channel.
	if status, _ := r.authorize(t, f.b.OwnerKey, c.socketID, aChannel); status != http.StatusForbidden {
		t.Fatalf("auth for another account's channel: %d", status)
	}
	// A signature A's key made for another socket is no use on this one.
	other := r.connect(t, f.a.OwnerKey)
	_, sigForOther := r.authorize(t, f.a.OwnerKey, other.socketID, aChannel)
	forged := realtime.Signer{Key: appKey, Secret: []byte("not the secret")}.Sign(c.socketID, aChannel)
	for _, try := range []struct{ channel, auth string }{
		{aChannel, sigForOther},
		{aChannel, forged},
		{aChannel, ""},
		{"private-account." + f.a.Account.PublicID + ".x", sigForOther},
		{"public-anything", ""},
		{"presence-account." + f.a.Account.PublicID, sigForOther},
	} {
		c.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": try.channel, "auth": try.auth}})
		m := c.read()
		var d struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		}
		json.Unmarshal(m.Data, &d) //nolint:errcheck // pusher:error data is an object
		if m.Event != "pusher:error" || d.Code == nil || *d.Code != realtime.ErrorCodeUnauthorized {
			t.Fatalf("subscribe %+v: %+v", try, m)
		}
		if m := c.read(); m.Event != "pusher:subscription_error" || m.Channel != try.channel {
			t.Fatalf("subscribe %+v: then %+v", try, m)
		}
	}
	if _, err := f.st.CreateTask(context.Background(), store.NewTask{AccountID: f.a.Account.ID, Text: "A's"}); err != nil {
		t.Fatal(err)
	}
	if m, err := c.tryRead(500 * time.Millisecond); err == nil {
		t.Fatalf("B's socket got %+v", m)
	}
}

func TestRevokingTheKeyOrTheUserLeavingEndsTheSubscription(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	ctx := context.Background()
	memberUser := f.a.NewMember(t, f.st, true, false)
	memberKey := apitest.NewKey(t, f.st, memberUser.ID)
	ownerSecondKey := apitest.NewKey(t, f.st, f.a.Owner.ID)

	byRevokedKey := r.connect(t, ownerSecondKey)
	r.subscribe(t, byRevokedKey, ownerSecondKey, f.a)
	byMember := r.connect(t, memberKey)
	r.subscribe(t, byMember, memberKey, f.a)
	byOwner := r.connect(t, f.a.OwnerKey)
	channel := r.subscribe(t, byOwner, f.a.OwnerKey, f.a)

	p, _, err := f.st.AuthenticateAndCount(ctx, auth.Digest(ownerSecondKey), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.st.RevokeAPIKey(ctx, p.KeyPublicID, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, seen := byRevokedKey.closeCode(5 * time.Second)
	if code != realtime.CloseUnauthorized || len(seen) != 1 || seen[0].Event != "pusher:error" {
		t.Fatalf("revoked key's socket closed with %d after %+v", code, seen)
	}
	if err := f.st.MarkUserLeft(ctx, memberUser.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := byMember.closeCode(5 * time.Second); code != realtime.CloseUnauthorized {
		t.Fatalf("the leaver's socket closed with %d", code)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("revocation took %s", took)
	}
	// The owner's own subscription goes on.
	if _, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.a.Account.ID, Text: "still here"}); err != nil {
		t.Fatal(err)
	}
	byOwner.expectEvent("todo.created", channel)

	// A key revoked between its auth call and the subscription does not subscribe.
	thirdKey := apitest.NewKey(t, f.st, f.a.Owner.ID)
	late := r.connect(t, thirdKey)
	status, sig := r.authorize(t, thirdKey, late.socketID, channel)
	if status != http.StatusOK {
		t.Fatalf("auth: %d", status)
	}
	p, _, err = f.st.AuthenticateAndCount(ctx, auth.Digest(thirdKey), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.RevokeAPIKey(ctx, p.KeyPublicID, time.Now()); err != nil {
		t.Fatal(err)
	}
	late.send(map[string]any{"event": "pusher:subscribe", "data": map[string]string{"channel": channel, "auth": sig}})
	if m := late.read(); m.Event != "pusher:error" {
		t.Fatalf("subscribe with a revoked key's grant: %+v", m)
	}
	// And the auth route refuses the revoked key (the API's 401).
	if status, _ := r.authorize(t, thirdKey, late.socketID, channel); status != http.StatusUnauthorized {
		t.Fatalf("auth with a revoked key: %d", status)
	}
}

// newTenant makes an account on plan and returns its owner's key.
func newTenant(t *testing.T, f *fixture, plan string) string {
	t.Helper()
	return apitest.NewTenant(t, f.st, plan).OwnerKey
}

func TestAnAccountPausedOrLosingTheAddonLosesItsChannel(t *testing.T) {
	f := newFixture(t)
	r := newReplica(t, f.dbURL, f.st, options{})
	ctx := context.Background()
	team := apitest.NewTenant(t, f.st, plans.Team, plans.AddonIntegrations)
	byTeam := r.connect(t, team.OwnerKey)
	r.subscribe(t, byTeam, team.OwnerKey, team)
	byA := r.connect(t, f.a.OwnerKey)
	r.subscribe(t, byA, f.a.OwnerKey, f.a)
	byB := r.connect(t, f.b.OwnerKey)
	channelB := r.subscribe(t, byB, f.b.OwnerKey, f.b)
	update := func(id int64, s store.AccountSettings) {
		t.Helper()
		if _, err := f.st.UpdateAccount(ctx, id, s); err != nil {
			t.Fatal(err)
		}
	}
	// A change the gate still allows (a plan that includes Integrations) ends nothing.
	business := plans.Business
	update(team.Account.ID, store.AccountSettings{Plan: &business})
	teamPlan, none := plans.Team, []string{}
	update(team.Account.ID, store.AccountSettings{Plan: &teamPlan})
	if m, err := byTeam.tryRead(300 * time.Millisecond); err == nil {
		t.Fatalf("the account still has Integrations, yet: %+v", m)
	}
	for _, tc := range []struct {
		name   string
		client *client
		change func()
		reason string
	}{
		{"the add-on removed", byTeam, func() { update(team.Account.ID, store.AccountSettings{Addons: &none}) }, plans.ReasonAddonRequired},
		{"the account paused", byA, func() {
			paused := "paused"
			update(f.a.Account.ID, store.AccountSettings{Status: &paused})
		}, plans.ReasonAccountInactive},
	} {
		tc.change()
		code, seen := tc.client.closeCode(5 * time.Second)
		if code != realtime.CloseUnauthorized || len(seen) != 1 {
			t.Fatalf("%s: closed with %d after %+v", tc.name, code, seen)
		}
		if _, text := errorOf(t, seen[0]); !strings.Contains(text, tc.reason) {
			t.Fatalf("%s: pusher:error %q does not name %s", tc.name, text, tc.reason)
		}
	}
	// Another account's subscription goes on.
	if _, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.b.Account.ID, Text: "still here"}); err != nil {
		t.Fatal(err)
	}
	byB.expectEvent("todo.created", channelB)
}
