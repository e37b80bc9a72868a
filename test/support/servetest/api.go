package servetest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Demo is the account `switchboard seed --demo` creates.
type Demo struct {
	AccountID, OwnerKey string
	// MemberKey is a read-only member's key.
	MemberKey string
}

// SeedDemo runs `bin seed --demo` (which first migrates with bin's own migrations) and reads
// the account's public id and its owner's API key from its output.
func (e *Env) SeedDemo(t testing.TB, bin string) Demo {
	t.Helper()
	out := e.Run(t, bin, "seed", "--demo", "--calls=1")
	var d Demo
	for _, line := range strings.Split(out, "\n") {
		if key, ok := strings.CutPrefix(line, "owner key "); ok {
			d.OwnerKey = strings.TrimSpace(key)
		}
		if key, ok := strings.CutPrefix(line, "read-only member key "); ok {
			d.MemberKey = strings.TrimSpace(key)
		}
		if id, ok := strings.CutPrefix(line, "account "); ok {
			d.AccountID = strings.TrimSpace(id)
		}
	}
	if d.OwnerKey == "" || d.AccountID == "" {
		t.Fatalf("seed printed no account or owner key:\n%s", out)
	}
	return d
}

// LiveNumber is the first number the platform API of r lists.
func LiveNumber(t testing.TB, r *Replica) string {
	t.Helper()
	status, _, body := Do("GET", "http://"+r.Platform+"/platform/v1/numbers", PlatformToken, nil)
	var list struct {
		Numbers []string `json:"numbers"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Numbers) == 0 {
		t.Fatalf("GET /platform/v1/numbers: %d %s", status, body)
	}
	return list.Numbers[0]
}

// Endpoint is a webhook endpoint as created.
type Endpoint struct {
	PublicID, Secret, Path string
}

// CreateEndpoint adds a webhook endpoint for call.ended at the receiver's path /hook/<name>
// through r's public API, and the inbox that verifies its signatures.
func (e *Env) CreateEndpoint(t testing.TB, r *Replica, key, name string) (Endpoint, *Inbox) {
	t.Helper()
	path := "/hook/" + name
	base := "http://" + r.API + "/v1/webhooks"
	var (
		status int
		body   []byte
	)
	// A 503 (kube-apiserver slower than the replica's timeout, as just after it starts) is
	// retried as an integrator would, once any endpoint the timed-out request made after all
	// is removed: a second one would receive every event too.
	for attempt := 0; ; attempt++ {
		status, _, body = Do("POST", base, key, map[string]any{
			"name": name, "url": e.Receiver.URL(path), "events": []string{"call.ended"}})
		if status != http.StatusServiceUnavailable || attempt == 3 {
			break
		}
		time.Sleep(3 * time.Second)
		removeEndpointsNamed(t, base, key, name)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create the webhook endpoint: %d %s", status, body)
	}
	var created struct {
		Endpoint struct {
			PublicID string `json:"public_id"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Secret == "" || created.Endpoint.PublicID == "" {
		t.Fatalf("create the webhook endpoint: %s (%v)", body, err)
	}
	return Endpoint{PublicID: created.Endpoint.PublicID, Secret: created.Secret, Path: path}, e.Receiver.Inbox(path, created.Secret)
}

// removeEndpointsNamed deletes the account's endpoints called name.
func removeEndpointsNamed(t testing.TB, base, key, name string) {
	t.Helper()
	status, _, body := Do("GET", base, key, nil)
	if status != http.StatusOK {
		t.Fatalf("list the webhook endpoints: %d %s", status, body)
	}
	var list struct {
		Endpoints []struct {
			PublicID string `json:"public_id"`
			Name     string `json:"name"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("list the webhook endpoints: %s (%v)", body, err)
	}
	for _, ep := range list.Endpoints {
		if ep.Name == name {
			if status, _, body := Do("DELETE", base+"/"+ep.PublicID, key, nil); status != http.StatusNoContent {
				t.Fatalf("delete the webhook endpoint %s: %d %s", ep.PublicID, status, body)
			}
		}
	}
}

// Report is one ended call (no answer, so no recording) for POST /platform/v1/calls.
func Report(ref, number string) map[string]any {
	return map[string]any{"platform_ref": ref, "to": number, "from": "+447700900201", "disposition": "no-answer",
		"started_at": time.Now().UTC().Add(-time.Minute).Truncate(time.Second), "duration_seconds": 30, "talk_seconds": 0}
}

// ReportCall sends Report(ref, number) to r and returns the call's public id.
func ReportCall(t testing.TB, r *Replica, ref, number string) string {
	t.Helper()
	id, err := TryReportCall(r, ref, number)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TryReportCall is ReportCall for a goroutine other than the test's.
func TryReportCall(r *Replica, ref, number string) (string, error) {
	status, _, body := Do("POST", "http://"+r.Platform+"/platform/v1/calls", PlatformToken, Report(ref, number))
	id, err := CallID(status, body)
	if err != nil {
		return "", fmt.Errorf("report %s: %w", ref, err)
	}
	return id, nil
}

// CallID reads the call's public id from a report's answer.
func CallID(status int, body []byte) (string, error) {
	if status != http.StatusCreated {
		return "", fmt.Errorf("status %d: %s", status, body)
	}
	var receipt struct {
		CallPublicID string `json:"call_public_id"`
	}
	if err := json.Unmarshal(body, &receipt); err != nil || receipt.CallPublicID == "" {
		return "", fmt.Errorf("%s (%v)", body, err)
	}
	return receipt.CallPublicID, nil
}

// UniqueRef is a platform reference no other test run uses.
func UniqueRef(prefix string, i int) string {
	return fmt.Sprintf("%s-%s-%d", prefix, rand.Text()[:8], i)
}

// Bad5xx reports whether an answer is a server error other than 503 with Retry-After
// (the one server error the spec allows: a dependency is unavailable, come back later).
func Bad5xx(status int, h http.Header) bool {
	unavailable := status == http.StatusServiceUnavailable && h.Get("Retry-After") != ""
	return status >= 500 && !unavailable
}
