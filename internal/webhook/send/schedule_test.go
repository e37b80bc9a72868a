package send

import (
	"testing"
	"time"
)

func TestNextAttemptFollowsTheSpecSchedule(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		attempts int
		want     time.Duration
		ok       bool
	}{
		{0, 0, false},
		{1, time.Minute, true},
		{2, 5 * time.Minute, true},
		{3, 30 * time.Minute, true},
		{4, 2 * time.Hour, true},
		{5, 10 * time.Hour, true},
		{6, 0, false},
		{7, 0, false},
	}
	for _, c := range cases {
		next, ok := NextAttempt(c.attempts, t0)
		if ok != c.ok || (ok && !next.Equal(t0.Add(c.want))) {
			t.Errorf("NextAttempt(%d) = %v, %v; want +%v, %v", c.attempts, next, ok, c.want, c.ok)
		}
	}
	if MaxAttempts != 6 {
		t.Errorf("MaxAttempts = %d, want 6 (the first and five retries)", MaxAttempts)
	}
}

func TestShouldSwitchOffAfter24HoursOfFailure(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		since *time.Time
		now   time.Time
		want  bool
	}{
		{"not failing", nil, since.Add(48 * time.Hour), false},
		{"just started failing", &since, since, false},
		{"a second short of a day", &since, since.Add(24*time.Hour - time.Second), false},
		{"exactly a day", &since, since.Add(24 * time.Hour), true},
		{"longer", &since, since.Add(30 * time.Hour), true},
	}
	for _, c := range cases {
		if got := ShouldSwitchOff(c.since, c.now); got != c.want {
			t.Errorf("%s: ShouldSwitchOff = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSignMatchesAKnownVector(t *testing.T) {
	// echo -n '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
	got := Sign("whsec_test", 1700000000, []byte(`{"a":1}`))
	if got != "38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789" {
		t.Fatalf("signature %q", got)
	}
	if got == Sign("whsec_other", 1700000000, []byte(`{"a":1}`)) || got == Sign("whsec_test", 1700000001, []byte(`{"a":1}`)) {
		t.Fatal("signature does not depend on the secret and timestamp")
	}
	// whsec_ and the standard base64 of 32 random bytes (the Standard Webhooks form).
	if s := NewSecret(); len(s) != len(SecretPrefix)+44 || s[:6] != "whsec_" || s == NewSecret() {
		t.Fatalf("NewSecret = %q", s)
	} else if key, ok := StandardKey(s); !ok || len(key) != 32 {
		t.Fatalf("StandardKey(%q) = %d bytes, %v", s, len(key), ok)
	}
}
