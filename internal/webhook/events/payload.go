// Package events builds the webhook events of the spec ("Payload (all events share one
// shape)"), which the store queues in the outbox table in the same transaction as the change that
// caused them, so nothing recorded is ever left unannounced. The package holds no SQL: it
// builds payloads from plain facts (CallFacts) and says which events a change produces
// (Produced); internal/store reads the facts and owns the outbox. The webhook dispatcher fans
// undispatched events out to WebhookDelivery resources; every attempt sends Body unchanged.
package events

import (
	"time"
)

// Event names (the X-Service-Event header and the payload's `event`).
const (
	CallEnded         = "call.ended"
	VoicemailReceived = "voicemail.received"
	TranscriptReady   = "transcript.ready"
	Test              = "test"
)

// TestCallID is the fixed marker call id of test events.
const TestCallID = "call_test_00000000"

// Payload is the body of every event.
type Payload struct {
	Event     string         `json:"event"`
	ID        string         `json:"id" format:"uuid" description:"The event's id; the same as X-Service-Delivery."`
	CreatedAt time.Time      `json:"created_at"`
	Test      bool           `json:"test,omitempty" const:"true" description:"Present, and true, only on test events."`
	Account   PayloadAccount `json:"account"`
	Call      PayloadCall    `json:"call"`
	Number    PayloadNumber  `json:"number"`
	Answer    PayloadAnswer  `json:"answer"`
	// Card is the AI summary; null until one exists (so usually null on call.ended).
	Card  *PayloadCard `json:"card"`
	Links PayloadLinks `json:"links"`
}

// PayloadAccount names the business for display; the signing secret identifies the account.
type PayloadAccount struct {
	Name string `json:"name"`
}

// PayloadCall is the call the event is about.
type PayloadCall struct {
	ID              string     `json:"id"`
	Direction       string     `json:"direction" enum:"inbound,outbound"`
	From            string     `json:"from"`
	To              string     `json:"to"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds int        `json:"duration_seconds"`
	TalkSeconds     int        `json:"talk_seconds"`
	Disposition     string     `json:"disposition"`
}

// PayloadNumber is the account's number that was called.
type PayloadNumber struct {
	E164  string `json:"e164"`
	Label string `json:"label"`
}

// PayloadAnswer says who answered, when known.
type PayloadAnswer struct {
	StaffMember *string `json:"staff_member"`
	Department  *string `json:"department"`
	TargetType  *string `json:"target_type"`
	TargetLabel *string `json:"target_label"`
	Answered    bool    `json:"answered"`
}

// PayloadCard is the AI summary of the call.
type PayloadCard struct {
	Subject        string   `json:"subject"`
	Gist           string   `json:"gist"`
	Mood           string   `json:"mood"`
	Urgency        string   `json:"urgency" enum:"low,normal,high"`
	ToDos          []string `json:"to_dos"`
	CallbackNumber *string  `json:"callback_number"`
}

// PayloadLinks point at the call in the dashboard and at the API operations that fetch its
// recording and transcript (webhooks never carry either).
type PayloadLinks struct {
	Dashboard     *string `json:"dashboard"`
	TranscriptAPI *string `json:"transcript_api"`
	RecordingAPI  *string `json:"recording_api"`
	// SharedPage is only on voicemail.received: a signed page to hear the voicemail.
	SharedPage *string `json:"shared_page,omitempty"`
}
