package ingest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/test/support/must"
)

// A report over the size limit is 413 {message}, like the public API, not 400.
func TestReportOverSizeLimitIs413(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/platform/v1/calls", "/platform/v1/texts", "/platform/v1/message-slips"} {
		body := `{"platform_ref":"` + strings.Repeat("a", 30<<20) + `"}`
		status, out := f.post(t, token, path, body)
		if status != http.StatusRequestEntityTooLarge || out["message"] == "" {
			t.Errorf("POST %s with 30 MiB: %d %v, want 413 with a message", path, status, out)
		}
	}
	// Just under the limit is not refused for its size (the report itself is invalid).
	status, _ := f.post(t, token, "/platform/v1/texts", `{"platform_ref":"`+strings.Repeat("a", 1<<20)+`"}`)
	if status == http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB report: 413, want it read")
	}
}

// With the database gone, reads and writes are 503 {message} with Retry-After, never 500.
func TestDatabaseUnavailableIs503(t *testing.T) {
	f := newFixture(t)
	f.st.Close()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/platform/v1/numbers", ""},
		{"POST", "/platform/v1/texts", `{"to":"+442079460555","from":"+447700900123","body":"Hi","received_at":"2026-11-20T13:00:00Z"}`},
		{"POST", "/platform/v1/calls", must.JSON(t, call("c1", "answered", nil))},
	} {
		req, _ := http.NewRequest(c.method, f.platform+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || out["message"] == "" {
			t.Errorf("%s %s: %d Retry-After %q %v, want 503 with Retry-After and a message", c.method, c.path,
				resp.StatusCode, resp.Header.Get("Retry-After"), out)
		}
	}
}
