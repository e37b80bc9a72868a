package events_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/events"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

var started = time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

func TestCallEventPayloadAndOncePerCall(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Brick & Co", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460123", Label: "Office"})
	if err != nil {
		t.Fatal(err)
	}
	staff := "Dee"
	callID, callPublicID, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, NumberID: &num.ID, FromE164: "+447700900001",
		ToE164: num.E164, Disposition: "answered", StartedAt: started, DurationSeconds: 125, TalkSeconds: 110, AnsweredBy: &staff})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &callID, Kind: "call", StorageKey: "a/b.wav"})
	if err != nil {
		t.Fatal(err)
	}
	links := events.Links{APIBaseURL: "https://api.example.test/", DashboardURL: "https://app.example.test"}

	var ended, ready events.Event
	err = st.InTx(ctx, func(tx pgx.Tx) error {
		ended, err = events.ForCall(ctx, tx, links, events.CallEnded, callID, "", started.Add(3*time.Minute))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(ended.Body, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "call.ended", "id": ended.ID.String(), "created_at": "2026-11-02T09:33:00Z",
		"account": map[string]any{"name": "Brick & Co"},
		"call": map[string]any{"id": callPublicID, "direction": "inbound", "from": "+447700900001", "to": "+442079460123",
			"started_at": "2026-11-02T09:30:00Z", "ended_at": "2026-11-02T09:32:05Z", "duration_seconds": 125.0,
			"talk_seconds": 110.0, "disposition": "answered"},
		"number": map[string]any{"e164": "+442079460123", "label": "Office"},
		"answer": map[string]any{"staff_member": "Dee", "department": nil, "target_type": nil, "target_label": nil, "answered": true},
		"card":   nil,
		"links": map[string]any{"dashboard": "https://app.example.test/calls/" + callPublicID,
			"transcript_api": "https://api.example.test/v1/recordings/" + rec.PublicID + "/transcript",
			"recording_api":  "https://api.example.test/v1/recordings/" + rec.PublicID + "/stream-url"},
	}
	if got, _ := json.Marshal(p); string(got) != mustJSON(t, want) {
		t.Errorf("call.ended payload\n got %s\nwant %s", got, mustJSON(t, want))
	}

	summary, intent, mood, urgency := "Wants a quote.", "quote_request", "positive", "low"
	if _, err := st.CreateCompletedTranscript(ctx, store.NewTranscript{AccountID: acct.ID, RecordingID: rec.ID, CallID: &callID,
		Summary: &summary, Intent: &intent, Sentiment: &mood, Urgency: &urgency, ActionItems: []string{"Send quote"}, CompletedAt: started}); err != nil {
		t.Fatal(err)
	}
	queued := []bool{}
	for range 2 {
		err = st.InTx(ctx, func(tx pgx.Tx) error {
			ready, err = events.ForCall(ctx, tx, links, events.TranscriptReady, callID, "", started)
			if err != nil {
				return err
			}
			q, err := events.Enqueue(ctx, tx, ready)
			queued = append(queued, q)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if queued[0] != true || queued[1] != false {
		t.Errorf("transcript.ready queued %v, want once: [true false]", queued)
	}
	var card struct {
		Card events.PayloadCard `json:"card"`
	}
	if err := json.Unmarshal(ready.Body, &card); err != nil {
		t.Fatal(err)
	}
	if card.Card.Subject != "Quote request" || card.Card.Gist != summary || card.Card.Mood != "positive" || card.Card.ToDos[0] != "Send quote" {
		t.Errorf("card = %+v", card.Card)
	}
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
