package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

func TestExample(t *testing.T) {
	links := events.Links{APIBaseURL: "https://api.example.com", DashboardURL: "https://app.example.com"}
	now := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		event                           string
		disposition                     string
		card, sharedPage, transcriptAPI bool
	}{
		{events.CallEnded, "answered", false, false, false},
		{events.VoicemailReceived, "voicemail", false, true, true},
		{events.TranscriptReady, "answered", true, false, true},
		{events.Test, "answered", true, false, false},
	} {
		body, err := events.Example(links, tc.event, "Acme Plumbing", now)
		if err != nil {
			t.Fatalf("%s: %v", tc.event, err)
		}
		var p events.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("%s: %v", tc.event, err)
		}
		if p.Event != tc.event || p.Account.Name != "Acme Plumbing" || p.Call.Disposition != tc.disposition ||
			(p.Card != nil) != tc.card || (p.Links.SharedPage != nil) != tc.sharedPage || (p.Links.TranscriptAPI != nil) != tc.transcriptAPI {
			t.Errorf("%s example: %s", tc.event, body)
		}
		if events.Descriptions[tc.event] == "" {
			t.Errorf("%s has no description", tc.event)
		}
	}
	if _, err := events.Example(links, "call.started", "Acme", now); err == nil {
		t.Error("an example of an event the service does not send was built")
	}
}
