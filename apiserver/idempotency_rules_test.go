package apiserver

import (
	"strings"
	"testing"
)

func TestKeepsAnswer(t *testing.T) {
	for status, want := range map[int]bool{
		200: true, 201: true, 202: true, 204: true, 400: true, 402: true, 403: true, 404: true, 422: true,
		409: false, 429: false, 500: false, 503: false,
	} {
		if got := keepsAnswer(status); got != want {
			t.Errorf("keepsAnswer(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestIdempotencyKeyProblem(t *testing.T) {
	for _, tc := range []struct {
		values []string
		ok     bool
	}{
		{[]string{"9f1c2d4e-uuid"}, true},
		{[]string{strings.Repeat("k", 255)}, true},
		{[]string{"spaces and ~punctuation!"}, true},
		{[]string{""}, false},
		{[]string{strings.Repeat("k", 256)}, false},
		{[]string{"a\tb"}, false},
		{[]string{"clé"}, false},
		{[]string{"a\x7f"}, false},
		{[]string{"a", "b"}, false},
	} {
		if got := idempotencyKeyProblem(tc.values) == ""; got != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.values, got, tc.ok)
		}
	}
}
