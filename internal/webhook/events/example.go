package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Descriptions say when each event is sent (the OpenAPI description's webhooks section and the
// portal's event catalogue).
var Descriptions = map[string]string{
	CallEnded:         "Any call ends, except blocked and emergency calls.",
	VoicemailReceived: "A voicemail has been delivered, once per voicemail; links.shared_page is set.",
	TranscriptReady:   "A recorded call (not a voicemail) has its transcript and, if one could be made, its AI summary.",
	Test:              "A test event: test is true, call.id is a fixed marker, card is full and links.dashboard, transcript_api and recording_api are null.",
}

// Example is the body of an event of eventType about a made-up call, built by the code that
// builds real events (ForCall, ForTest), so it has the shape endpoints receive.
func Example(links Links, eventType, accountName string, now time.Time) (json.RawMessage, error) {
	if eventType == Test {
		ev, err := ForTest(0, accountName, now)
		return ev.Body, err
	}
	now = now.UTC().Truncate(time.Second)
	ended := now.Add(-time.Minute)
	f := CallFacts{AccountName: accountName,
		Call: PayloadCall{ID: "call_example0000", Direction: "inbound", From: "+447700900123", To: "+442079460000",
			StartedAt: ended.Add(-3 * time.Minute), EndedAt: &ended, DurationSeconds: 180, TalkSeconds: 165, Disposition: "answered"},
		Number: &PayloadNumber{E164: "+442079460000", Label: "Main line"}}
	staff, department, targetType, targetLabel := "Sam Example", "Sales", "staff", "Front desk"
	f.Answer = PayloadAnswer{StaffMember: &staff, Department: &department, TargetType: &targetType, TargetLabel: &targetLabel}
	sharedPage := ""
	switch eventType {
	case CallEnded:
	case VoicemailReceived:
		f.Call.Disposition, f.Call.TalkSeconds, f.Answer = "voicemail", 0, PayloadAnswer{}
		f.RecordingPublicID = "rec_example0000"
		sharedPage = strings.TrimRight(links.DashboardURL, "/") + "/voicemail/example"
	case TranscriptReady:
		intent, sentiment, urgency, callback := "book_repair", "neutral", "medium", "+447700900123"
		f.RecordingPublicID = "rec_example0000"
		f.Summary = &SummaryFacts{Summary: "The caller wants a boiler repair booked this week.", Intent: &intent, Sentiment: &sentiment,
			Urgency: &urgency, ActionItems: []string{"Call back to book a repair"}, CallbackNumber: &callback}
	default:
		return nil, fmt.Errorf("no such event: %q", eventType)
	}
	ev, err := ForCall(links, eventType, f, sharedPage, now)
	return ev.Body, err
}
