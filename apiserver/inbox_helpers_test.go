package apiserver_test

// Helpers shared by the tests of the inbox operations (sms, tasks, notifications, reception
// messages, job requests, blocked callers) and billing.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// ibNow is the fixed "now" of the inbox tests: Monday 10 March 2025, 12:00 UTC (GMT in London).
var ibNow = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

// ibHarness is a harness whose clock stands still at ibNow until stepped. As the clock does
// not move, every request falls in one rate-limit minute: the limit is raised so that the
// longer tests (more than 60 requests by one user) are not cut off.
func ibHarness(t *testing.T, opts ...func(*apiserver.Config)) (*harness, *clocktesting.FakeClock) {
	t.Helper()
	fake := clocktesting.NewFakeClock(ibNow)
	base := func(c *apiserver.Config) { c.Clock, c.RequestsPerMinute = fake, 10000 }
	return newHarness(t, append([]func(*apiserver.Config){base}, opts...)...), fake
}

// ibGetPage GETs path with key, wants 200 and decodes the page.
func ibGetPage(t *testing.T, h *harness, key, path string) rawPage {
	t.Helper()
	resp := h.api.Do(t, key, "GET", path, nil)
	if resp.Status != 200 {
		t.Fatalf("GET %s: %s", path, resp)
	}
	var p rawPage
	resp.JSON(t, &p)
	if p.Data == nil {
		t.Fatalf("GET %s: data is not an array: %s", path, resp.Body)
	}
	return p
}

// ibWantIDs fails unless got equals want in order.
func ibWantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// ibWantEnvelope checks the paging fields; next and prev are query strings of the wanted links or "".
func ibWantEnvelope(t *testing.T, h *harness, p rawPage, path string, current, last, perPage, total int, next, prev string) {
	t.Helper()
	if p.CurrentPage != current || p.LastPage != last || p.PerPage != perPage || p.Total != total {
		t.Errorf("%s: current_page %d last_page %d per_page %d total %d, want %d %d %d %d",
			path, p.CurrentPage, p.LastPage, p.PerPage, p.Total, current, last, perPage, total)
	}
	check := func(name string, got *string, wantQuery string) {
		t.Helper()
		if wantQuery == "" {
			if got != nil {
				t.Errorf("%s: %s = %q, want null", path, name, *got)
			}
			return
		}
		if got == nil {
			t.Errorf("%s: %s = null, want ?%s", path, name, wantQuery)
			return
		}
		u, err := url.Parse(*got)
		if err != nil {
			t.Fatalf("%s: %s = %q: %v", path, name, *got, err)
		}
		wantQ, _ := url.ParseQuery(wantQuery)
		wantPath, _, _ := strings.Cut(path, "?")
		if u.Scheme+"://"+u.Host != h.api.BaseURL || u.Path != wantPath || u.Query().Encode() != wantQ.Encode() {
			t.Errorf("%s: %s = %q, want %s%s?%s", path, name, *got, h.api.BaseURL, wantPath, wantQuery)
		}
	}
	check("next_page_url", p.NextPageURL, next)
	check("prev_page_url", p.PrevPageURL, prev)
}

// ibWant422 wants a 422 whose errors name field.
func ibWant422(t *testing.T, h *harness, key, method, path string, body any, field string) {
	t.Helper()
	resp := h.api.Do(t, key, method, path, body)
	if resp.Status != 422 {
		t.Errorf("%s %s: %s, want 422", method, path, resp)
		return
	}
	var v struct {
		Message string              `json:"message"`
		Errors  map[string][]string `json:"errors"`
	}
	resp.JSON(t, &v)
	if v.Message == "" || len(v.Errors[field]) == 0 {
		t.Errorf("%s %s: 422 %s does not name %s", method, path, resp.Body, field)
	}
}

// ibWantStatus wants a status.
func ibWantStatus(t *testing.T, h *harness, key, method, path string, body any, status int) map[string]any {
	t.Helper()
	resp := h.api.Do(t, key, method, path, body)
	if resp.Status != status {
		t.Errorf("%s %s: %s, want %d", method, path, resp, status)
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(resp.Body, &m)
	return m
}

// ibNumber adds a number.
func ibNumber(t *testing.T, st *store.Store, accountID int64, e164, label string) store.NumberRow {
	t.Helper()
	n, err := st.CreateNumber(context.Background(), store.NewNumber{AccountID: accountID, E164: e164, Label: label})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ibCall adds a call and returns its id and public_id.
func ibCall(t *testing.T, st *store.Store, accountID int64, numberID *int64, from, to string, startedAt time.Time) (int64, string) {
	t.Helper()
	pid := store.NewPublicID(store.PrefixCall)
	var id int64
	if err := storetest.SQL(t, st).QueryRow(context.Background(), `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164,
			disposition, started_at) VALUES ($1, $2, $3, $4, $5, 'answered', $6) RETURNING id`,
		accountID, pid, numberID, from, to, startedAt).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id, pid
}

func ibStr(s string) *string { return &s }

func ibTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v is not a date-time string", v)
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return tm
}

// ibWantFields fails unless row has exactly the wanted keys with the wanted values
// (times are compared as instants; nil means JSON null).
func ibWantFields(t *testing.T, what string, row map[string]any, want map[string]any) {
	t.Helper()
	for k := range row {
		if _, ok := want[k]; !ok {
			t.Errorf("%s has unexpected field %q = %v", what, k, row[k])
		}
	}
	for k, w := range want {
		g, ok := row[k]
		if !ok {
			t.Errorf("%s lacks field %q", what, k)
			continue
		}
		switch w := w.(type) {
		case time.Time:
			if g == nil || !ibTime(t, g).Equal(w) {
				t.Errorf("%s.%s = %v, want %s", what, k, g, w.Format(time.RFC3339))
			}
		case int:
			if g != float64(w) {
				t.Errorf("%s.%s = %v, want %d", what, k, g, w)
			}
		case map[string]any:
			m, ok := g.(map[string]any)
			if !ok {
				t.Errorf("%s.%s = %v, want an object", what, k, g)
				continue
			}
			ibWantFields(t, what+"."+k, m, w)
		default:
			if fmt.Sprint(g) != fmt.Sprint(w) || (w == nil) != (g == nil) {
				t.Errorf("%s.%s = %#v, want %#v", what, k, g, w)
			}
		}
	}
}

// ibWantPermissionRefused wants 403 {message} naming the missing permission.
func ibWantPermissionRefused(t *testing.T, h *harness, key, method, path string, body any, permission string) {
	t.Helper()
	resp := h.api.Do(t, key, method, path, body)
	if resp.Status != 403 {
		t.Errorf("%s %s without %s: %s, want 403", method, path, permission, resp)
		return
	}
	if msg, _ := resp.Map(t)["message"].(string); !strings.Contains(msg, permission) {
		t.Errorf("%s %s without %s: 403 %s does not name the permission", method, path, permission, resp.Body)
	}
}

// ibWantAddonRefused wants the Integrations gate's 403 with reason addon_required
// (key belongs to a Team account without the add-on).
func ibWantAddonRefused(t *testing.T, h *harness, key, method, path string, body any) {
	t.Helper()
	resp := h.api.Do(t, key, method, path, body)
	if resp.Status != 403 {
		t.Errorf("%s %s without Integrations: %s, want 403", method, path, resp)
		return
	}
	m := resp.Map(t)
	if m["reason"] != "addon_required" || m["capability"] != "integrations" || m["message"] == "" || m["pricing_url"] == "" {
		t.Errorf("%s %s without Integrations: 403 %s, want reason addon_required, capability integrations", method, path, resp.Body)
	}
}
