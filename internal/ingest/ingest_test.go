package ingest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

const token = "platform-token-for-tests"

var now = time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)

type fixture struct {
	st         *store.Store
	recordings *recordingstore.Local
	platform   string // ingestion API base URL
	api        string // public API base URL
	account    store.Account
	number     store.NumberRow
	clock      *clocktesting.FakeClock
	recorded   []int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{st: storetest.NewStore(t), clock: clocktesting.NewFakeClock(now)}
	var err error
	f.recordings, err = recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.recordings.Close() })
	f.account, err = f.st.CreateAccount(ctx, store.NewAccount{Name: "Pipe Dreams Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	f.number, err = f.st.CreateNumber(ctx, store.NewNumber{AccountID: f.account.ID, E164: "+442079460555", Label: "Front desk"})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("a link signing key of 32 bytes!!")
	api := httptest.NewUnstartedServer(nil)
	f.api = "http://" + api.Listener.Addr().String()
	api.Config.Handler = apiserver.New(apiserver.Config{BaseURL: f.api, Clock: f.clock, Log: logr.Discard(),
		Media: apiserver.MediaConfig{SigningKey: key, Recordings: f.recordings}}, f.st)
	api.Start()
	t.Cleanup(api.Close)
	h := ingest.New(ingest.Config{Token: token, LinkSigningKey: key, Recordings: f.recordings, Clock: f.clock, Log: logr.Discard(),
		Links: ingestLinks(f.api),
		RecordedCall: func(_ context.Context, _, callID int64) error {
			f.recorded = append(f.recorded, callID)
			return nil
		}}, f.st)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.platform = srv.URL
	return f
}

func (f *fixture) post(t *testing.T, tok, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest("POST", f.platform+path, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

type queued struct {
	Type string
	Body map[string]any
}

func (f *fixture) events(t *testing.T) []queued {
	t.Helper()
	rows, err := storetest.SQL(t, f.st).Query(context.Background(), `SELECT type, body FROM events WHERE account_id = $1 ORDER BY created_at, type`, f.account.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var q queued
		var body []byte
		if err := rows.Scan(&q.Type, &body); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &q.Body); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

func call(ref, disposition string, rec map[string]any) map[string]any {
	c := map[string]any{"platform_ref": ref, "to": "020 7946 0555", "from": "+44 7700 900123", "caller_name": "Ola",
		"disposition": disposition, "started_at": now.Add(-5 * time.Minute).Format(time.RFC3339), "duration_seconds": 95,
		"talk_seconds": 80, "answer": map[string]any{"staff_member": "Kim", "department": "Sales", "target_type": "staff", "target_label": "Kim's mobile"}}
	if rec != nil {
		c["recording"] = rec
	}
	return c
}

func TestPlatformTokenIsRequired(t *testing.T) {
	f := newFixture(t)
	for _, tok := range []string{"", "wrong"} {
		if status, _ := f.post(t, tok, "/platform/v1/calls", call("x", "answered", nil)); status != 401 {
			t.Errorf("token %q: %d, want 401", tok, status)
		}
	}
}

func TestRecordedCallIsStoredAndAnnouncedOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	audio := []byte("RIFF....WAVEfmt fake audio bytes")
	rec := map[string]any{"kind": "call", "duration_seconds": 80, "audio_base64": base64.StdEncoding.EncodeToString(audio)}
	status, body := f.post(t, token, "/platform/v1/calls", call("plat-1", "answered", rec))
	if status != 201 || body["duplicate"] != false || len(body["events"].([]any)) != 1 || body["events"].([]any)[0] != "call.ended" {
		t.Fatalf("report: %d %v", status, body)
	}
	callID, recID := body["call_public_id"].(string), body["recording_public_id"].(string)
	got, err := f.st.GetCall(ctx, f.account.ID, callID)
	if err != nil || got.From != "+447700900123" || got.To != "+442079460555" || got.Disposition != "answered" {
		t.Fatalf("stored call: %+v, %v", got, err)
	}
	r, err := f.st.GetRecording(ctx, f.account.ID, recID)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := f.recordings.Open(ctx, r.StorageKey)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(obj)
	_ = obj.Close()
	if !bytes.Equal(stored, audio) || r.SizeBytes != int64(len(audio)) || r.Kind != "call" {
		t.Errorf("recording %+v holds %q", r, stored)
	}

	evs := f.events(t)
	if len(evs) != 1 || evs[0].Type != "call.ended" {
		t.Fatalf("events %v", evs)
	}
	p := evs[0].Body
	c, links, answer := p["call"].(map[string]any), p["links"].(map[string]any), p["answer"].(map[string]any)
	if c["id"] != callID || c["from"] != "+447700900123" || c["duration_seconds"] != 95.0 || c["talk_seconds"] != 80.0 ||
		answer["staff_member"] != "Kim" || answer["answered"] != true || p["card"] != nil ||
		links["recording_api"] != f.api+"/v1/recordings/"+recID+"/stream-url" || p["number"].(map[string]any)["label"] != "Front desk" {
		t.Errorf("call.ended payload: %v", p)
	}
	if len(f.recorded) != 1 {
		t.Errorf("recorded-call hook ran %d times, want 1", len(f.recorded))
	}

	// The platform sends the same report again: nothing new is stored or announced.
	status, body = f.post(t, token, "/platform/v1/calls", call("plat-1", "answered", rec))
	if status != 200 || body["duplicate"] != true || body["call_public_id"] != callID || len(body["events"].([]any)) != 0 {
		t.Fatalf("repeat: %d %v", status, body)
	}
	if n := len(f.events(t)); n != 1 {
		t.Errorf("%d events after a repeated report, want 1", n)
	}
	if len(f.recorded) != 1 {
		t.Errorf("recorded-call hook ran again for a repeat")
	}
}

func TestWhichCallsAreAnnounced(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		ref, disposition string
		emergency        bool
		want             []any
	}{
		{"b1", "blocked", false, []any{}},
		{"e1", "answered", true, []any{}},
		{"n1", "no-answer", false, []any{"call.ended"}},
	}
	for _, c := range cases {
		report := call(c.ref, c.disposition, nil)
		report["emergency"] = c.emergency
		status, body := f.post(t, token, "/platform/v1/calls", report)
		if status != 201 || len(body["events"].([]any)) != len(c.want) {
			t.Errorf("%s: %d %v, want events %v", c.ref, status, body, c.want)
		}
	}
}

func TestVoicemailPageLink(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec := map[string]any{"kind": "voicemail", "duration_seconds": 20, "audio_base64": base64.StdEncoding.EncodeToString([]byte("voicemail audio"))}
	status, body := f.post(t, token, "/platform/v1/calls", call("vm-1", "voicemail", rec))
	if status != 201 || len(body["events"].([]any)) != 2 {
		t.Fatalf("voicemail report: %d %v", status, body)
	}
	if len(f.recorded) != 0 {
		t.Error("a voicemail ran the recorded-call hook (only recorded calls are transcribed automatically)")
	}
	var page string
	for _, ev := range f.events(t) {
		links := ev.Body["links"].(map[string]any)
		sp, has := links["shared_page"]
		if (ev.Type == "voicemail.received") != has {
			t.Errorf("%s: shared_page present = %v", ev.Type, has)
		}
		if has {
			page = sp.(string)
		}
	}
	get := func() (int, string) {
		resp, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, html := get(); status != 200 || !strings.Contains(html, "Pipe Dreams Ltd") || !strings.Contains(html, "447700900123") ||
		!strings.Contains(html, "/v1/media/recordings/"+body["recording_public_id"].(string)) {
		t.Fatalf("page: %d %s", status, html)
	}
	if status, _ := get(); status != 200 {
		t.Fatal("second view")
	}
	// The owner closes the pages already sent.
	if _, err := storetest.SQL(t, f.st).Exec(ctx, `UPDATE accounts SET shared_links_revoked_before = $2 WHERE id = $1`, f.account.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(); status != 403 {
		t.Errorf("closed page: %d, want 403", status)
	}
	if _, err := storetest.SQL(t, f.st).Exec(ctx, `UPDATE accounts SET shared_links_revoked_before = NULL WHERE id = $1`, f.account.ID); err != nil {
		t.Fatal(err)
	}
	// The number's link lifetime (168 h by default) ends.
	f.clock.Step(168 * time.Hour)
	if status, _ := get(); status != 403 {
		t.Errorf("expired page: %d, want 403", status)
	}
	f.clock.SetTime(now)
	if _, err := storetest.SQL(t, f.st).Exec(ctx, `UPDATE recordings SET deleted_at = $3 WHERE account_id = $1 AND public_id = $2`,
		f.account.ID, body["recording_public_id"].(string), now); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(); status != 404 {
		t.Errorf("deleted voicemail: %d, want 404", status)
	}
	altered, err := http.Get(strings.Replace(page, "sig=", "sig=0", 1))
	if err != nil {
		t.Fatal(err)
	}
	altered.Body.Close()
	if altered.StatusCode != 403 {
		t.Errorf("altered link: %d, want 403", altered.StatusCode)
	}
}

func TestBadReports(t *testing.T) {
	f := newFixture(t)
	bad := call("z", "exploded", map[string]any{"kind": "song", "audio_base64": "%%%"})
	bad["from"] = "not a number"
	bad["talk_seconds"] = 500
	status, body := f.post(t, token, "/platform/v1/calls", bad)
	errs, _ := body["errors"].(map[string]any)
	for _, field := range []string{"from", "disposition", "talk_seconds", "recording.kind", "recording.audio_base64"} {
		if _, ok := errs[field]; !ok {
			t.Errorf("no error for %s in %v", field, body)
		}
	}
	if status != 422 {
		t.Errorf("status %d, want 422", status)
	}
	// Values PostgreSQL could not store are the report's fault: 422, never 500.
	unstorable := call("nul", "answered", nil)
	unstorable["caller_name"] = "Ola\x00"
	unstorable["duration_seconds"] = 1 << 40
	unstorable["rated_pence"] = -5
	status, body = f.post(t, token, "/platform/v1/calls", unstorable)
	errs, _ = body["errors"].(map[string]any)
	for _, field := range []string{"caller_name", "duration_seconds", "rated_pence"} {
		if _, ok := errs[field]; !ok || status != 422 {
			t.Errorf("unstorable %s: %d %v, want 422 naming it", field, status, body)
		}
	}
	for path, report := range map[string]map[string]any{
		"/platform/v1/texts":         {"to": "+442079460555", "from": "07700 900777", "body": "late\x00", "received_at": now.Format(time.RFC3339)},
		"/platform/v1/message-slips": {"to": "+442079460555", "from": "07700 900777", "caller_name": "A\x00", "received_at": now.Format(time.RFC3339)},
	} {
		if status, body := f.post(t, token, path, report); status != 422 {
			t.Errorf("%s with a NUL: %d %v, want 422", path, status, body)
		}
	}
	if status, _ := f.post(t, token, "/platform/v1/calls", `{"to":`); status != 400 {
		t.Errorf("malformed JSON: %d, want 400", status)
	}
	unknown := call("u", "answered", nil)
	unknown["to"] = "+442079460999"
	if status, _ := f.post(t, token, "/platform/v1/calls", unknown); status != 404 {
		t.Errorf("unknown number: %d, want 404", status)
	}
	var calls int
	if err := storetest.SQL(t, f.st).QueryRow(context.Background(), `SELECT count(*) FROM calls`).Scan(&calls); err != nil || calls != 0 {
		t.Errorf("%d calls stored from bad reports", calls)
	}
}

func TestTextsAndSlips(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	status, body := f.post(t, token, "/platform/v1/texts", map[string]any{"to": "+442079460555", "from": "07700 900777",
		"body": "Running late", "received_at": now.Format(time.RFC3339)})
	if status != 201 {
		t.Fatalf("text: %d %v", status, body)
	}
	convs, total, err := f.st.ListSMSConversations(ctx, f.account.ID, 10, 0)
	if err != nil || total != 1 || convs[0].PublicID != body["conversation_public_id"] || convs[0].CounterpartyE164 != "+447700900777" {
		t.Errorf("conversations %+v %d %v", convs, total, err)
	}
	status, body = f.post(t, token, "/platform/v1/message-slips", map[string]any{"to": "+442079460555", "from": "+447700900778",
		"caller_name": "Raj", "department": "Accounts", "received_at": now.Format(time.RFC3339)})
	if status != 201 || !strings.HasPrefix(body["message_slip_public_id"].(string), "slip_") {
		t.Fatalf("slip: %d %v", status, body)
	}
}

func ingestLinks(api string) events.Links {
	return events.Links{APIBaseURL: api, DashboardURL: "https://app.example.test"}
}
