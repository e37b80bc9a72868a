package events

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Links configures the addresses events point at.
type Links struct {
	// APIBaseURL is the public API origin, e.g. https://api.switchboard.dev (no /v1).
	APIBaseURL string
	// DashboardURL is the web app origin; a call is at DashboardURL + "/calls/" + id.
	DashboardURL string
}

// Event is a built event, ready for the outbox.
type Event struct {
	ID        uuid.UUID
	AccountID int64
	// CallID is the call's internal id (nil for test events).
	CallID *int64
	Type   string
	// Body is the exact JSON every attempt sends.
	Body      []byte
	CreatedAt time.Time
}

// CallFacts are what a call's events say about it, as stored (the store reads them in the
// transaction that recorded the change).
type CallFacts struct {
	AccountID   int64
	CallID      int64
	AccountName string
	Call        PayloadCall
	// Number is the account's number that was called; nil when it is gone (the payload then
	// shows the dialled number without a label).
	Number *PayloadNumber
	// Answer without Answered, which follows from the disposition.
	Answer PayloadAnswer
	// RecordingPublicID is the call's recording or voicemail ("" when there is none).
	RecordingPublicID string
	// Summary is the completed AI summary of that recording (nil until there is one).
	Summary *SummaryFacts
}

// SummaryFacts are the stored fields of a completed summary.
type SummaryFacts struct {
	Summary        string
	Intent         *string
	Sentiment      *string
	Urgency        *string
	ActionItems    []string
	CallbackNumber *string
}

// ForCall builds an event of eventType about a call from its facts. sharedPage is the
// voicemail page address (voicemail.received only; empty otherwise).
func ForCall(links Links, eventType string, f CallFacts, sharedPage string, now time.Time) (Event, error) {
	p := Payload{Account: PayloadAccount{Name: f.AccountName}, Call: f.Call, Answer: f.Answer}
	if f.Number != nil {
		p.Number = *f.Number
	} else {
		p.Number = PayloadNumber{E164: f.Call.To}
	}
	p.Answer.Answered = p.Call.Disposition == "answered"
	if s := f.Summary; s != nil {
		todos := s.ActionItems
		if todos == nil {
			todos = []string{}
		}
		p.Card = &PayloadCard{Subject: subjectOf(s.Intent), Gist: s.Summary, Mood: deref(s.Sentiment), Urgency: deref(s.Urgency),
			ToDos: todos, CallbackNumber: s.CallbackNumber}
	}
	dashboard := strings.TrimRight(links.DashboardURL, "/") + "/calls/" + p.Call.ID
	p.Links.Dashboard = &dashboard
	if f.RecordingPublicID != "" {
		base := strings.TrimRight(links.APIBaseURL, "/") + "/v1/recordings/" + f.RecordingPublicID
		transcript, recording := base+"/transcript", base+"/stream-url"
		p.Links.TranscriptAPI, p.Links.RecordingAPI = &transcript, &recording
	}
	if eventType == VoicemailReceived && sharedPage != "" {
		p.Links.SharedPage = &sharedPage
	}
	id := uuid.New()
	p.Event, p.ID, p.CreatedAt = eventType, id.String(), now.UTC().Truncate(time.Second)
	body, err := json.Marshal(p)
	if err != nil {
		return Event{}, err
	}
	callID := f.CallID
	return Event{ID: id, AccountID: f.AccountID, CallID: &callID, Type: eventType, Body: body, CreatedAt: p.CreatedAt}, nil
}

// ForTest builds a test event for the account: test true, the fixed marker call id, a full
// card, and null API links.
func ForTest(accountID int64, accountName string, now time.Time) (Event, error) {
	now = now.UTC().Truncate(time.Second)
	id := uuid.New()
	ended := now.Add(-time.Minute)
	staff, department, targetType, targetLabel := "Sam Example", "Sales", "staff", "Front desk"
	callback := "+447700900123"
	p := Payload{
		Event: Test, ID: id.String(), CreatedAt: now, Test: true,
		Account: PayloadAccount{Name: accountName},
		Call: PayloadCall{ID: TestCallID, Direction: "inbound", From: "+447700900123", To: "+442079460000",
			StartedAt: ended.Add(-3 * time.Minute), EndedAt: &ended, DurationSeconds: 180, TalkSeconds: 165, Disposition: "answered"},
		Number: PayloadNumber{E164: "+442079460000", Label: "Main line"},
		Answer: PayloadAnswer{StaffMember: &staff, Department: &department, TargetType: &targetType, TargetLabel: &targetLabel, Answered: true},
		Card: &PayloadCard{Subject: "Test event", Gist: "This is a test delivery from Switchboard; no real call took place.",
			Mood: "neutral", Urgency: "low", ToDos: []string{"Check that your endpoint verified the signature"}, CallbackNumber: &callback},
	}
	body, err := json.Marshal(p)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: id, AccountID: accountID, Type: Test, Body: body, CreatedAt: now}, nil
}

// subjectOf turns an intent such as "book_repair" into a subject line, "Book repair".
func subjectOf(intent *string) string {
	if intent == nil || *intent == "" {
		return "Call"
	}
	s := strings.ReplaceAll(*intent, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
