package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/must"
)

var started = time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func TestProduced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change events.CallChange
		want   []string
	}{
		{"answered call", events.CallChange{What: events.CallReported, Disposition: "answered"}, []string{events.CallEnded}},
		{"recorded call", events.CallChange{What: events.CallReported, Disposition: "answered", RecordingKind: "call"}, []string{events.CallEnded}},
		{"missed call", events.CallChange{What: events.CallReported, Disposition: "missed"}, []string{events.CallEnded}},
		{"voicemail", events.CallChange{What: events.CallReported, Disposition: "voicemail", RecordingKind: "voicemail"},
			[]string{events.CallEnded, events.VoicemailReceived}},
		{"blocked call", events.CallChange{What: events.CallReported, Disposition: "blocked"}, nil},
		{"emergency call", events.CallChange{What: events.CallReported, Disposition: "answered", Emergency: true}, nil},
		{"emergency call with a voicemail", events.CallChange{What: events.CallReported, Disposition: "voicemail", Emergency: true,
			RecordingKind: "voicemail"}, []string{events.VoicemailReceived}},
		{"summary of a recorded call", events.CallChange{What: events.SummaryFinished, RecordingKind: "call"}, []string{events.TranscriptReady}},
		{"summary of a voicemail", events.CallChange{What: events.SummaryFinished, RecordingKind: "voicemail"}, nil},
		{"no change", events.CallChange{Disposition: "answered"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events.Produced(tc.change)
			if len(got) != len(tc.want) {
				t.Fatalf("Produced = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Produced = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestForCallBuildsThePayloadFromFacts(t *testing.T) {
	ended := started.Add(125 * time.Second)
	base := events.CallFacts{AccountID: 7, CallID: 42, AccountName: "Brick & Co",
		Call: events.PayloadCall{ID: "call_1", Direction: "inbound", From: "+447700900001", To: "+442079460123", StartedAt: started,
			EndedAt: &ended, DurationSeconds: 125, TalkSeconds: 110, Disposition: "answered"},
		Answer: events.PayloadAnswer{StaffMember: ptr("Dee")}}
	links := events.Links{APIBaseURL: "https://api.example.test/", DashboardURL: "https://app.example.test"}
	withEverything := base
	withEverything.Number = &events.PayloadNumber{E164: "+442079460123", Label: "Office"}
	withEverything.RecordingPublicID = "rec_1"
	withEverything.Summary = &events.SummaryFacts{Summary: "Wants a quote.", Intent: ptr("quote_request"), Sentiment: ptr("positive"),
		Urgency: ptr("low"), ActionItems: []string{"Send quote"}}
	noTodos := base
	noTodos.Summary = &events.SummaryFacts{Summary: "Nothing to do."}
	missed := base
	missed.Call.Disposition = "missed"

	for _, tc := range []struct {
		name, eventType, page string
		facts                 events.CallFacts
		want                  map[string]any // the payload's fields that differ from the plain case
	}{
		{name: "plain: dialled number without label, no recording, no card", eventType: events.CallEnded, facts: base,
			want: map[string]any{}},
		{name: "number, recording and card", eventType: events.TranscriptReady, facts: withEverything, want: map[string]any{
			"number": map[string]any{"e164": "+442079460123", "label": "Office"},
			"card": map[string]any{"subject": "Quote request", "gist": "Wants a quote.", "mood": "positive", "urgency": "low",
				"to_dos": []any{"Send quote"}, "callback_number": nil},
			"links": map[string]any{"dashboard": "https://app.example.test/calls/call_1",
				"transcript_api": "https://api.example.test/v1/recordings/rec_1/transcript",
				"recording_api":  "https://api.example.test/v1/recordings/rec_1/stream-url"},
		}},
		{name: "a card without intent or to-dos", eventType: events.TranscriptReady, facts: noTodos, want: map[string]any{
			"card": map[string]any{"subject": "Call", "gist": "Nothing to do.", "mood": "", "urgency": "", "to_dos": []any{},
				"callback_number": nil},
		}},
		{name: "unanswered", eventType: events.CallEnded, facts: missed, want: map[string]any{
			"call": func() map[string]any {
				c := plainCall()
				c["disposition"] = "missed"
				return c
			}(),
			"answer": map[string]any{"staff_member": "Dee", "department": nil, "target_type": nil, "target_label": nil, "answered": false},
		}},
		{name: "voicemail with its shared page", eventType: events.VoicemailReceived, page: "https://api.example.test/v/abc", facts: base,
			want: map[string]any{"links": map[string]any{"dashboard": "https://app.example.test/calls/call_1", "transcript_api": nil,
				"recording_api": nil, "shared_page": "https://api.example.test/v/abc"}}},
		{name: "a shared page only on voicemail.received", eventType: events.CallEnded, page: "https://api.example.test/v/abc", facts: base,
			want: map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := events.ForCall(links, tc.eventType, tc.facts, tc.page, started.Add(3*time.Minute+500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if ev.AccountID != 7 || ev.CallID == nil || *ev.CallID != 42 || ev.Type != tc.eventType || !ev.CreatedAt.Equal(started.Add(3*time.Minute)) {
				t.Errorf("event = %+v", ev)
			}
			want := map[string]any{
				"event": tc.eventType, "id": ev.ID.String(), "created_at": "2026-11-02T09:33:00Z",
				"account": map[string]any{"name": "Brick & Co"},
				"call":    plainCall(),
				"number":  map[string]any{"e164": "+442079460123", "label": ""},
				"answer":  map[string]any{"staff_member": "Dee", "department": nil, "target_type": nil, "target_label": nil, "answered": true},
				"card":    nil,
				"links":   map[string]any{"dashboard": "https://app.example.test/calls/call_1", "transcript_api": nil, "recording_api": nil},
			}
			for k, v := range tc.want {
				want[k] = v
			}
			if got, want := canonical(t, ev.Body), must.JSON(t, want); got != want {
				t.Errorf("payload\n got %s\nwant %s", got, want)
			}
		})
	}
}

func plainCall() map[string]any {
	return map[string]any{"id": "call_1", "direction": "inbound", "from": "+447700900001", "to": "+442079460123",
		"started_at": "2026-11-02T09:30:00Z", "ended_at": "2026-11-02T09:32:05Z", "duration_seconds": 125.0,
		"talk_seconds": 110.0, "disposition": "answered"}
}

func TestTestEventHasMarkerAndNullLinks(t *testing.T) {
	ev, err := events.ForTest(1, "Brick & Co", started)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(ev.Body, &p); err != nil {
		t.Fatal(err)
	}
	links := p["links"].(map[string]any)
	if p["test"] != true || p["call"].(map[string]any)["id"] != events.TestCallID || p["card"] == nil ||
		links["dashboard"] != nil || links["transcript_api"] != nil || links["recording_api"] != nil {
		t.Errorf("test payload = %s", ev.Body)
	}
	if _, has := links["shared_page"]; has {
		t.Error("test payload has shared_page")
	}
}

// canonical re-encodes a JSON object with sorted keys.
func canonical(t *testing.T, body []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return must.JSON(t, v)
}
