package store

import (
	"testing"
	"time"
)

func TestIdempotencyOutcome(t *testing.T) {
	now := time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC)
	req := IdempotencyRequest{Route: "POST /v1/contacts/", BodySHA256: []byte{1, 2}}
	for _, tc := range []struct {
		name        string
		route       string
		body        []byte
		state       IdempotencyState
		lockedUntil time.Time
		want        ClaimOutcome
	}{
		{"completed", req.Route, req.BodySHA256, IdempotencyCompleted, now.Add(-time.Hour), ClaimReplay},
		{"other route wins over state", "POST /v1/contacts/bulk-upsert", req.BodySHA256, IdempotencyCompleted, now, ClaimOtherRoute},
		{"other body", req.Route, []byte{9}, IdempotencyCompleted, now, ClaimOtherBody},
		{"running within its lease", req.Route, req.BodySHA256, IdempotencyRunning, now.Add(time.Second), ClaimInFlight},
		{"running past its lease", req.Route, req.BodySHA256, IdempotencyRunning, now, ClaimGranted},
		{"committed, answer being saved", req.Route, req.BodySHA256, IdempotencyCommitted, now.Add(time.Second), ClaimInFlight},
		{"committed, answer lost", req.Route, req.BodySHA256, IdempotencyCommitted, now, ClaimUnanswered},
	} {
		if got := idempotencyOutcome(req, tc.route, tc.body, tc.state, tc.lockedUntil, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
