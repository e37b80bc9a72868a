package apiserver

import (
	"strings"
	"testing"
	"time"
)

func TestSaneRequestID(t *testing.T) {
	cases := map[string]struct {
		id   string
		want bool
	}{
		"uuid":              {"0b5e7c1e-8f0a-4d7e-9a57-3f8b0f6f9d11", true},
		"token characters":  {"req_ABC.123~x|y", true},
		"longest":           {strings.Repeat("a", maxRequestIDLength), true},
		"empty":             {"", false},
		"too long":          {strings.Repeat("a", maxRequestIDLength+1), false},
		"space":             {"a b", false},
		"newline forges":    {"abc\nlevel=error", false},
		"quote":             {`a"b`, false},
		"non-ascii":         {"réq", false},
		"control character": {"a\x00b", false},
		"comma":             {"a,b", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := saneRequestID(c.id); got != c.want {
				t.Errorf("saneRequestID(%q) = %v, want %v", c.id, got, c.want)
			}
		})
	}
}

func TestRequestIDKeepsSaneOnesOnly(t *testing.T) {
	if got := requestID("caller-42"); got != "caller-42" {
		t.Errorf("a sane id was replaced: %q", got)
	}
	a, b := requestID("bad id"), requestID("")
	if a == "bad id" || !saneRequestID(a) || !saneRequestID(b) || a == b {
		t.Errorf("fresh ids %q, %q: want two different sane ids", a, b)
	}
}

func TestBudgetOf(t *testing.T) {
	window := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	cases := map[string]struct {
		limit, count int
		now          time.Time
		want         rateLimitBudget
	}{
		"first request":         {60, 1, window, rateLimitBudget{60, 59, 60}},
		"last allowed":          {60, 60, window.Add(30 * time.Second), rateLimitBudget{60, 0, 30}},
		"over the limit":        {60, 75, window.Add(59*time.Second + time.Millisecond), rateLimitBudget{60, 0, 1}},
		"part second rounds up": {10, 3, window.Add(20*time.Second + 500*time.Millisecond), rateLimitBudget{10, 7, 40}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := budgetOf(c.limit, c.count, c.now, window); got != c.want {
				t.Errorf("budgetOf = %+v, want %+v", got, c.want)
			}
		})
	}
}
