package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// ErrNoSuchCall is returned when the call to announce does not exist.
var ErrNoSuchCall = errors.New("events: no such call")

// ForCall builds an event of type about the call with internal id callID, reading what the
// payload needs in q (use the transaction that recorded the change). sharedPage is the
// voicemail page address (voicemail.received only; empty otherwise).
func ForCall(ctx context.Context, q pgx.Tx, links Links, eventType string, callID int64, sharedPage string, now time.Time) (Event, error) {
	var (
		p                       Payload
		accountID               int64
		numberE164, numberLabel *string
		recordingID             *string
		summary, intent         *string
		sentiment, urgency      *string
		actionItems             []string
		callback                *string
	)
	err := q.QueryRow(ctx, `SELECT c.account_id, a.name, c.public_id, c.direction, c.from_e164, c.to_e164, c.started_at,
			c.ended_at, c.duration_seconds, c.talk_seconds, c.disposition, n.e164, n.label,
			c.answered_by_staff, c.answered_department, c.answer_target_type, c.answer_target_label,
			r.public_id, t.summary, t.intent, t.sentiment, t.urgency, t.action_items, t.callback_number
		FROM calls c
		JOIN accounts a ON a.id = c.account_id
		LEFT JOIN numbers n ON n.id = c.number_id
		LEFT JOIN LATERAL (SELECT id, public_id FROM recordings
			WHERE call_id = c.id AND kind IN ('call', 'voicemail') AND deleted_at IS NULL ORDER BY id LIMIT 1) r ON true
		LEFT JOIN transcripts t ON t.recording_id = r.id AND t.summary_status = 'completed'
		WHERE c.id = $1`, callID).Scan(
		&accountID, &p.Account.Name, &p.Call.ID, &p.Call.Direction, &p.Call.From, &p.Call.To, &p.Call.StartedAt,
		&p.Call.EndedAt, &p.Call.DurationSeconds, &p.Call.TalkSeconds, &p.Call.Disposition, &numberE164, &numberLabel,
		&p.Answer.StaffMember, &p.Answer.Department, &p.Answer.TargetType, &p.Answer.TargetLabel,
		&recordingID, &summary, &intent, &sentiment, &urgency, &actionItems, &callback)
	if errors.Is(err, pgx.ErrNoRows) {
		return Event{}, ErrNoSuchCall
	}
	if err != nil {
		return Event{}, fmt.Errorf("read call %d for %s: %w", callID, eventType, err)
	}
	if numberE164 != nil {
		p.Number = PayloadNumber{E164: *numberE164, Label: *numberLabel}
	} else {
		p.Number = PayloadNumber{E164: p.Call.To}
	}
	p.Answer.Answered = p.Call.Disposition == "answered"
	if summary != nil {
		if actionItems == nil {
			actionItems = []string{}
		}
		p.Card = &PayloadCard{Subject: subjectOf(intent), Gist: *summary, Mood: deref(sentiment), Urgency: deref(urgency),
			ToDos: actionItems, CallbackNumber: callback}
	}
	dashboard := strings.TrimRight(links.DashboardURL, "/") + "/calls/" + p.Call.ID
	p.Links.Dashboard = &dashboard
	if recordingID != nil {
		base := strings.TrimRight(links.APIBaseURL, "/") + "/v1/recordings/" + *recordingID
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
	return Event{ID: id, AccountID: accountID, CallID: &callID, Type: eventType, Body: body, CreatedAt: p.CreatedAt}, nil
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

// Enqueue stores ev in the outbox. An event a call already has of the same type (call.ended,
// voicemail.received, transcript.ready: once per call) is not stored again: queued is false.
func Enqueue(ctx context.Context, tx pgx.Tx, ev Event) (queued bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, type, body, call_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, ev.ID, ev.AccountID, ev.Type, ev.Body, ev.CallID, ev.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("queue %s event: %w", ev.Type, err)
	}
	return tag.RowsAffected() == 1, nil
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
