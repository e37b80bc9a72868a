package ingest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// do sends a platform request and returns the status and the raw body.
func (f *fixture) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	default:
		data, _ = json.Marshal(b)
	}
	req, _ := http.NewRequest(method, f.platform+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

func decodeMap(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return m
}

// twice sends a request twice and checks that both answers are the same.
func (f *fixture) twice(t *testing.T, method, path string, body any, want int) map[string]any {
	t.Helper()
	status, first := f.do(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, first, want)
	}
	status, again := f.do(t, method, path, body)
	if status != want || !bytes.Equal(first, again) {
		t.Fatalf("%s %s repeated: %d %s\nfirst answer: %s", method, path, status, again, first)
	}
	return decodeMap(t, first)
}

var officeRouting = map[string]any{
	"default": map[string]any{"mode": "voicemail", "recording_enabled": true, "voicemail_fallback": false, "whisper": false,
		"ai_cover": "off", "forward_targets": []any{}, "ivr": map[string]any{"options": []any{}}},
	"schedules": []any{map[string]any{"name": "Office hours",
		"windows": []any{map[string]any{"days": []int{1, 2, 3, 4, 5}, "start": "08:00", "end": "18:00"}},
		"mode":    "forward", "recording_enabled": true, "voicemail_fallback": true, "whisper": true, "ai_cover": "off",
		"forward_targets": []any{map[string]any{"kind": "pstn", "e164": "07700 900900", "staff_label": "Kim", "ring_seconds": 25}},
		"ivr":             map[string]any{"options": []any{}}}},
	"override": map[string]any{"mode": "voicemail", "until": now.Add(48 * time.Hour).Format(time.RFC3339),
		"recording_enabled": false, "voicemail_fallback": false, "whisper": false, "ai_cover": "off",
		"forward_targets": []any{}, "ivr": map[string]any{"options": []any{}}},
}

// The platform adds a number and its routing; the public API then shows them, checked against
// its OpenAPI description.
func TestNumberFromThePlatformShowsInThePublicAPI(t *testing.T) {
	f := newFixture(t)
	tenant := apitest.NewTenant(t, f.st, plans.Business)
	api := apitest.New(f.api)

	number := f.twice(t, "POST", "/platform/v1/numbers", map[string]any{"account": tenant.Account.PublicID, "number": "020 7946 0100",
		"label": "Reception", "business_profile": "Tap & Tile", "sms_capable": true, "sms_ready": true, "cli_eligible": true,
		"cli_verified": true, "forward_cli_mode": "own", "call_transcription_enabled": true}, 200)
	id := number["public_id"].(string)
	if number["e164"] != "+442079460100" || number["account"] != tenant.Account.PublicID || number["status"] != "assigned" ||
		number["ownership"] != "rented" || number["voicemail_transcription_enabled"] != true {
		t.Fatalf("provisioned %v", number)
	}

	// The simulator and the platform read the live numbers here.
	if _, live := f.do(t, "GET", "/platform/v1/numbers", nil); !strings.Contains(string(live), `"+442079460100"`) {
		t.Errorf("GET /platform/v1/numbers: %s", live)
	}
	list := api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers", nil)
	rows := list.Map(t)["data"].([]any)
	if list.Status != 200 || len(rows) != 1 || rows[0].(map[string]any)["public_id"] != id || rows[0].(map[string]any)["label"] != "Reception" {
		t.Fatalf("GET /v1/numbers: %s", list)
	}
	got := api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+id, nil)
	n := got.Map(t)
	if got.Status != 200 || n["business_profile"].(map[string]any)["name"] != "Tap & Tile" || n["cli_verified"] != true ||
		n["forward_cli"].(map[string]any)["shows"] != "+442079460100" || n["sms_ready"] != true {
		t.Fatalf("GET /v1/numbers/%s: %s", id, got)
	}

	routing := f.twice(t, "PUT", "/platform/v1/numbers/+442079460100/routing", officeRouting, 200)
	public := api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+id+"/routing", nil)
	if public.Status != 200 || !reflect.DeepEqual(public.Map(t), routing) {
		t.Fatalf("public routing %s\nplatform answered %v", public, routing)
	}
	schedule := routing["schedules"].([]any)[0].(map[string]any)
	target := schedule["forward_targets"].([]any)[0].(map[string]any)
	if routing["default"].(map[string]any)["mode"] != "voicemail" || schedule["name"] != "Office hours" ||
		target["e164"] != "+447700900900" || target["ring_seconds"] != 25.0 || routing["override"] == nil ||
		routing["number"].(map[string]any)["call_transcription_enabled"] != true {
		t.Errorf("routing %v", routing)
	}

	// Routing replaced: the override and schedules go.
	f.twice(t, "PUT", "/platform/v1/numbers/+442079460100/routing", map[string]any{"default": officeRouting["default"]}, 200)
	public = api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+id+"/routing", nil)
	if r := public.Map(t); r["override"] != nil || len(r["schedules"].([]any)) != 0 {
		t.Errorf("after replacing the routing: %s", public)
	}

	updated := f.twice(t, "PATCH", "/platform/v1/numbers/+442079460100", map[string]any{"label": "Front desk", "privacy_mode_enabled": true}, 200)
	if updated["label"] != "Front desk" || updated["privacy_mode_enabled"] != true || updated["sms_ready"] != true || updated["public_id"] != id {
		t.Errorf("updated %v", updated)
	}
	if n := api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+id, nil).Map(t); n["label"] != "Front desk" {
		t.Errorf("public number after the update: %v", n)
	}

	released := f.twice(t, "POST", "/platform/v1/numbers/+442079460100/release", map[string]any{}, 200)
	if released["status"] != "released" || released["release_at"] != now.Format(time.RFC3339) {
		t.Errorf("released %v", released)
	}
	list = api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers", nil)
	if rows := list.Map(t)["data"].([]any); len(rows) != 0 {
		t.Errorf("a released number is listed: %s", list)
	}
	if _, live := f.do(t, "GET", "/platform/v1/numbers", nil); strings.Contains(string(live), `"+442079460100"`) {
		t.Errorf("a released number is live: %s", live)
	}
	if n := api.Do(t, tenant.OwnerKey, "GET", "/v1/numbers/"+id, nil).Map(t); n["status"] != "released" {
		t.Errorf("released number reads %v", n)
	}
	if status, body := f.do(t, "PATCH", "/platform/v1/numbers/+442079460100", map[string]any{"label": "x"}); status != 409 {
		t.Errorf("updating a released number: %d %s", status, body)
	}
	// Another account can have the number now; calls to it are theirs.
	other := apitest.NewTenant(t, f.st, plans.Business)
	again := f.twice(t, "POST", "/platform/v1/numbers", map[string]any{"account": other.Account.PublicID, "number": "+442079460100"}, 200)
	if again["public_id"] == id || again["account"] != other.Account.PublicID || again["label"] != "" {
		t.Errorf("re-provisioned %v", again)
	}
	if status, body := f.post(t, token, "/platform/v1/texts", map[string]any{"to": "+442079460100", "from": "07700900123",
		"body": "hi", "received_at": now.Format(time.RFC3339)}); status != 201 {
		t.Errorf("text to the new number: %d %v", status, body)
	}
	if n := api.Do(t, other.OwnerKey, "GET", "/v1/numbers/"+id, nil); n.Status != 404 {
		t.Errorf("the other account reads the first one's number: %s", n)
	}
}

func TestNumberPorting(t *testing.T) {
	f := newFixture(t)
	tenant := apitest.NewTenant(t, f.st, plans.Business)
	n := f.twice(t, "POST", "/platform/v1/numbers", map[string]any{"account": tenant.Account.PublicID, "number": "+44 161 496 0200",
		"porting_in": true, "label": "Old line"}, 200)
	if n["status"] != "porting" || n["ownership"] != "ported" {
		t.Fatalf("porting in: %v", n)
	}
	path := "/platform/v1/numbers/+441614960200"
	if status, body := f.do(t, "POST", path+"/port", map[string]any{"direction": "out", "step": "started",
		"release_at": now.Add(time.Hour).Format(time.RFC3339)}); status != 409 {
		t.Errorf("port out while porting in: %d %s", status, body)
	}
	n = f.twice(t, "POST", path+"/port", map[string]any{"direction": "in", "step": "completed"}, 200)
	if n["status"] != "assigned" || n["ownership"] != "ported" {
		t.Fatalf("port in completed: %v", n)
	}
	portDate := now.Add(14 * 24 * time.Hour)
	n = f.twice(t, "POST", path+"/port", map[string]any{"direction": "out", "step": "started", "release_at": portDate.Format(time.RFC3339)}, 200)
	if n["status"] != "releasing" || n["release_at"] != portDate.Format(time.RFC3339) {
		t.Fatalf("port out started: %v", n)
	}
	if list := apitest.New(f.api).Do(t, tenant.OwnerKey, "GET", "/v1/numbers", nil); !strings.Contains(string(list.Body), `"releasing"`) {
		t.Errorf("a number porting out is still listed: %s", list)
	}
	n = f.twice(t, "POST", path+"/port", map[string]any{"direction": "out", "step": "cancelled"}, 200)
	if n["status"] != "assigned" || n["release_at"] != nil {
		t.Fatalf("port out cancelled: %v", n)
	}
	f.clock.Step(time.Minute)
	n = f.twice(t, "POST", path+"/port", map[string]any{"direction": "out", "step": "completed"}, 200)
	if n["status"] != "released" || n["release_at"] != now.Add(time.Minute).Format(time.RFC3339) {
		t.Fatalf("port out completed: %v", n)
	}
	if status, body := f.do(t, "GET", path, nil); status != 200 || decodeMap(t, body)["status"] != "released" {
		t.Errorf("GET a released number: %d %s", status, body)
	}
}

func TestNumberRequestsThatFail(t *testing.T) {
	f := newFixture(t)
	tenant := apitest.NewTenant(t, f.st, plans.Business)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		errors             []string // 422 fields
	}{
		{"unknown account", "POST", "/platform/v1/numbers", map[string]any{"account": "acct_nope", "number": "+442079460300"}, 404, nil},
		{"bad number and settings", "POST", "/platform/v1/numbers", map[string]any{"number": "12", "forward_cli_mode": "platform"}, 422,
			[]string{"account", "number", "platform_e164"}},
		{"live on another account", "POST", "/platform/v1/numbers", map[string]any{"account": tenant.Account.PublicID, "number": "020 7946 0555"}, 409, nil},
		{"unknown field", "POST", "/platform/v1/numbers", map[string]any{"account": tenant.Account.PublicID, "number": "+442079460300", "colour": "red"}, 400, nil},
		{"not JSON", "PATCH", "/platform/v1/numbers/+442079460555", "{", 400, nil},
		{"over the size limit", "PATCH", "/platform/v1/numbers/+442079460555", `{"label":"` + strings.Repeat("x", 70<<10) + `"}`, 413, nil},
		{"unknown number", "PATCH", "/platform/v1/numbers/+442079460399", map[string]any{"label": "x"}, 404, nil},
		{"unreadable number", "GET", "/platform/v1/numbers/not-a-number", nil, 404, nil},
		{"bad port step", "POST", "/platform/v1/numbers/+442079460555/port", map[string]any{"direction": "in", "step": "started"}, 422, []string{"step"}},
		{"port out without a date", "POST", "/platform/v1/numbers/+442079460555/port", map[string]any{"direction": "out", "step": "started"}, 422, []string{"release_at"}},
		{"port in on a rented number", "POST", "/platform/v1/numbers/+442079460555/port", map[string]any{"direction": "in", "step": "completed"}, 409, nil},
		{"bad routing", "PUT", "/platform/v1/numbers/+442079460555/routing", map[string]any{"default": map[string]any{"mode": "forward"},
			"schedules": []any{map[string]any{"name": "", "mode": "voicemail", "windows": []any{map[string]any{"days": []int{9}, "start": "08:00", "end": "8pm"}}}}}, 422,
			[]string{"default.forward_targets", "schedules[0].name", "schedules[0].windows[0].days", "schedules[0].windows[0].end"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := f.do(t, c.method, c.path, c.body)
			m := decodeMap(t, body)
			if status != c.status || m["message"] == "" {
				t.Fatalf("%d %s, want %d", status, body, c.status)
			}
			if c.errors != nil {
				errs, _ := m["errors"].(map[string]any)
				var fields []string
				for k := range errs {
					fields = append(fields, k)
				}
				if len(fields) != len(c.errors) {
					t.Errorf("errors %v, want fields %v", errs, c.errors)
				}
				for _, field := range c.errors {
					if _, ok := errs[field]; !ok {
						t.Errorf("errors %v lack %s", errs, field)
					}
				}
			}
		})
	}
	// Nothing above changed the fixture's number.
	status, body := f.do(t, "GET", "/platform/v1/numbers/+442079460555", nil)
	if m := decodeMap(t, body); status != 200 || m["label"] != "Front desk" || m["status"] != "assigned" || m["account"] != f.account.PublicID {
		t.Errorf("fixture number after the failures: %d %s", status, body)
	}
	req, _ := http.NewRequest("POST", f.platform+"/platform/v1/numbers", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("without the token: %d, want 401", resp.StatusCode)
	}
}

// Requests racing to add the same number all answer the one number.
func TestConcurrentProvisionAddsOneNumber(t *testing.T) {
	f := newFixture(t)
	tenant := apitest.NewTenant(t, f.st, plans.Business)
	body := map[string]any{"account": tenant.Account.PublicID, "number": "+442079460400", "label": "Race"}
	answers := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			status, data := f.do(t, "POST", "/platform/v1/numbers", body)
			if status != 200 {
				t.Errorf("provision: %d %s", status, data)
			}
			answers[i] = data
		})
	}
	wg.Wait()
	for _, a := range answers[1:] {
		if !bytes.Equal(a, answers[0]) {
			t.Errorf("answers differ:\n%s\n%s", a, answers[0])
		}
	}
	var count int
	if err := storetest.SQL(t, f.st).QueryRow(t.Context(), `SELECT count(*) FROM numbers WHERE e164 = '+442079460400'`).Scan(&count); err != nil || count != 1 {
		t.Errorf("%d numbers stored, %v", count, err)
	}
}
