package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/must"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

var eventsStarted = time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

// The facts read from the five tables reach the payload, and a call's event is queued once.
func TestQueueCallEventPayloadAndOncePerCall(t *testing.T) {
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
		ToE164: num.E164, Disposition: "answered", StartedAt: eventsStarted, DurationSeconds: 125, TalkSeconds: 110, AnsweredBy: &staff})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &callID, Kind: "call", StorageKey: "a/b.wav"})
	if err != nil {
		t.Fatal(err)
	}
	links := events.Links{APIBaseURL: "https://api.example.test/", DashboardURL: "https://app.example.test"}

	err = st.InTx(ctx, func(tx *store.Tx) error {
		queued, err := tx.QueueCallEvent(ctx, links, events.CallEnded, callID, "", eventsStarted.Add(3*time.Minute))
		if !queued && err == nil {
			t.Error("call.ended not queued")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := eventBody(t, st, callID, events.CallEnded)
	var p map[string]any
	if err := json.Unmarshal(ended, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "call.ended", "id": p["id"], "created_at": "2026-11-02T09:33:00Z",
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
	if got, _ := json.Marshal(p); string(got) != must.JSON(t, want) {
		t.Errorf("call.ended payload\n got %s\nwant %s", got, must.JSON(t, want))
	}

	summary, intent, mood, urgency := "Wants a quote.", "quote_request", "positive", "low"
	if _, err := st.CreateCompletedTranscript(ctx, store.NewTranscript{AccountID: acct.ID, RecordingID: rec.ID, CallID: &callID,
		Summary: &summary, Intent: &intent, Sentiment: &mood, Urgency: &urgency, ActionItems: []string{"Send quote"}, CompletedAt: eventsStarted}); err != nil {
		t.Fatal(err)
	}
	queued := []bool{}
	for range 2 {
		err = st.InTx(ctx, func(tx *store.Tx) error {
			q, err := tx.QueueCallEvent(ctx, links, events.TranscriptReady, callID, "", eventsStarted)
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
	if err := json.Unmarshal(eventBody(t, st, callID, events.TranscriptReady), &card); err != nil {
		t.Fatal(err)
	}
	if card.Card.Subject != "Quote request" || card.Card.Gist != summary || card.Card.Mood != "positive" || card.Card.ToDos[0] != "Send quote" {
		t.Errorf("card = %+v", card.Card)
	}
}

func TestQueueCallEventOfNoCall(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	err := st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.QueueCallEvent(ctx, events.Links{}, events.CallEnded, -1, "", eventsStarted)
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func eventBody(t *testing.T, st *store.Store, callID int64, typ string) []byte {
	t.Helper()
	var (
		id   uuid.UUID
		body []byte
		p    struct{ ID string }
	)
	if err := st.SQL().QueryRow(context.Background(), `SELECT id, body FROM events WHERE call_id = $1 AND type = $2`, callID, typ).Scan(&id, &body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &p); err != nil || p.ID != id.String() {
		t.Errorf("%s body id %q (%v), want the event's id %s", typ, p.ID, err, id)
	}
	return body
}

// enqueueEventsSecondsApart queues n call.ended events of the account, each committed on
// its own, created a second apart from at, and returns their ids, oldest first.
func enqueueEventsSecondsApart(t *testing.T, st *store.Store, accountID int64, at time.Time, n int) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.EnqueueEvents(ctx, []events.Event{{ID: ids[i], AccountID: accountID, Type: events.CallEnded,
				Body: []byte(`{}`), CreatedAt: at.Add(time.Duration(i) * time.Second)}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// A claim commits at once and holds its events for the lease: a second claimer gets none of
// them until the lease ends, then the same events again; marked events are never claimed
// again, released ones at once.
func TestClaimEventsLease(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	ids := enqueueEventsSecondsApart(t, st, tenant.Account.ID, at, 5)
	claimed := map[uuid.UUID]bool{}
	claim := func(now time.Time, limit int) []uuid.UUID {
		t.Helper()
		evs, err := st.ClaimEvents(ctx, limit, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uuid.UUID, len(evs))
		for i, e := range evs {
			out[i] = e.ID
			if e.Repeat != claimed[e.ID] {
				t.Errorf("event %s Repeat = %v, want %v", e.ID, e.Repeat, claimed[e.ID])
			}
			claimed[e.ID] = true
			if e.AccountPublicID != tenant.Account.PublicID || e.Type != events.CallEnded {
				t.Errorf("claimed %+v", e)
			}
		}
		return out
	}
	now := at.Add(time.Hour)
	first := claim(now, 3)
	if !slices.Equal(first, ids[:3]) {
		t.Fatalf("first claim = %v, want the three oldest %v", first, ids[:3])
	}
	if got := claim(now.Add(time.Second), 10); !slices.Equal(got, ids[3:]) {
		t.Fatalf("second claim = %v, want the two others %v", got, ids[3:])
	}
	if got := claim(now.Add(59*time.Second), 10); len(got) != 0 {
		t.Fatalf("claimed %v within the lease", got)
	}
	// The first claimer stopped without marking: its events are taken again past the lease.
	if got := claim(now.Add(time.Minute), 10); !slices.Equal(got, ids[:3]) {
		t.Fatalf("claim past the lease = %v, want %v", got, ids[:3])
	}
	later := now.Add(time.Minute)
	if err := st.MarkEventsDispatched(ctx, ids[:2], later); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseEvents(ctx, ids[2:3]); err != nil {
		t.Fatal(err)
	}
	if got := claim(later, 10); !slices.Equal(got, ids[2:3]) {
		t.Fatalf("claim after release = %v, want the released %v", got, ids[2:3])
	}
	if got := claim(later.Add(time.Hour), 10); !slices.Equal(got, ids[2:]) {
		t.Fatalf("claim an hour on = %v, want the undispatched %v", got, ids[2:])
	}
	var dispatched int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM events WHERE id = ANY($1) AND dispatched_at = $2 AND claimed_until IS NULL`,
		ids[:2], later).Scan(&dispatched); err != nil || dispatched != 2 {
		t.Fatalf("dispatched = %d (%v), want 2", dispatched, err)
	}
}

// A renewal extends the claims still held, and only those: a released event stays free and a
// dispatched one is never claimed again.
func TestRenewEventClaims(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	ids := enqueueEventsSecondsApart(t, st, apitest.NewTenant(t, st, plans.Business).Account.ID, at, 4)
	claim := func(now time.Time) []uuid.UUID {
		t.Helper()
		evs, err := st.ClaimEvents(ctx, 10, now, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out []uuid.UUID
		for _, e := range evs {
			out = append(out, e.OutboxID)
		}
		return out
	}
	now := at.Add(time.Hour)
	if got := claim(now); !slices.Equal(got, ids) {
		t.Fatalf("first claim = %v, want all %v", got, ids)
	}
	if err := st.MarkEventsDispatched(ctx, ids[3:], now); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseEvents(ctx, ids[2:3]); err != nil {
		t.Fatal(err)
	}
	// Renewing all four, as a renewal racing the release and the mark would.
	if err := st.RenewEventClaims(ctx, ids, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := claim(now.Add(30 * time.Second)); !slices.Equal(got, ids[2:3]) {
		t.Fatalf("claim past the first lease = %v, want only the released %v (the renewed ones are held)", got, ids[2:3])
	}
	if got := claim(now.Add(time.Minute)); !slices.Equal(got, ids[:3]) {
		t.Fatalf("claim past the renewal = %v, want the three undispatched %v", got, ids[:3])
	}
}

// Claims made at the same time never share an event.
func TestClaimEventsConcurrentClaimersSplitTheOutbox(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	const n = 400
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		for i := range n {
			if _, err := tx.EnqueueEvents(ctx, []events.Event{{ID: uuid.New(), AccountID: tenant.Account.ID, Type: events.CallEnded,
				Body: []byte(`{}`), CreatedAt: at.Add(time.Duration(i) * time.Millisecond)}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[uuid.UUID]int{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				evs, err := st.ClaimEvents(ctx, 25, at.Add(time.Hour), time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(evs) == 0 {
					return
				}
				mu.Lock()
				for _, e := range evs {
					seen[e.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d distinct events, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("event %s claimed %d times", id, c)
		}
	}
}

// Rows for one endpoint: a test event and a resend. A resend is a row of its own carrying the
// event's id, type and body; both are listed as queued until dispatched, and a resend of an
// event the account does not have is not found.
func TestOutboxRowsForOneEndpoint(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	other := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	original, test, resend := uuid.New(), uuid.New(), uuid.New()
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.EnqueueEvents(ctx, []events.Event{{ID: original, AccountID: tenant.Account.ID, Type: events.CallEnded,
			Body: []byte(`{"n":1}`), CreatedAt: at}}); err != nil {
			return err
		}
		return tx.EnqueueEventFor(ctx, events.Event{ID: test, AccountID: tenant.Account.ID, Type: events.Test,
			Body: []byte(`{"n":2}`), CreatedAt: at.Add(time.Second)}, "whep-a")
	}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.ClaimEvents(ctx, 10, at.Add(time.Minute), time.Minute)
	if err != nil || len(evs) != 2 {
		t.Fatalf("claim %+v %v", evs, err)
	}
	if err := st.MarkEventsDispatched(ctx, []uuid.UUID{evs[0].OutboxID}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		return tx.EnqueueResend(ctx, other.Account.ID, original, "whep-b", "whdl-x", uuid.New(), at.Add(2*time.Minute))
	}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resend of another account's event: %v", err)
	}
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		return tx.EnqueueResend(ctx, tenant.Account.ID, original, "whep-a", "whdl-x", resend, at.Add(2*time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	queued, err := st.QueuedDeliveriesFor(ctx, tenant.Account.ID, store.QueuedFilter{EndpointPublicID: "whep-a", Since: at, Limit: 100})
	if err != nil || len(queued) != 2 || queued[0].OutboxID != resend || queued[0].EventID != original || !queued[0].Resend ||
		queued[1].OutboxID != test || queued[1].EventID != test || queued[1].Resend {
		t.Errorf("queued %+v %v", queued, err)
	}
	evs, err = st.ClaimEvents(ctx, 10, at.Add(3*time.Minute), time.Minute)
	if err != nil || len(evs) != 2 {
		t.Fatalf("claim %+v %v", evs, err)
	}
	for _, e := range evs {
		switch e.OutboxID {
		case test:
			if e.ID != test || e.EndpointPublicID != "whep-a" || e.ResendOf != "" || e.DeliverySalt() != "" || e.Type != events.Test {
				t.Errorf("test row %+v", e)
			}
		case resend:
			if e.ID != original || e.EndpointPublicID != "whep-a" || e.ResendOf != "whdl-x" || string(e.Body) != `{"n":1}` ||
				e.Type != events.CallEnded || e.DeliverySalt() != "resend-"+resend.String() {
				t.Errorf("resend row %+v", e)
			}
		default:
			t.Errorf("claimed %+v", e)
		}
	}
	if err := st.MarkEventsDispatched(ctx, []uuid.UUID{test, resend}, at.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if queued, err := st.QueuedDeliveriesFor(ctx, tenant.Account.ID, store.QueuedFilter{EndpointPublicID: "whep-a", Since: at, Limit: 100}); err != nil || len(queued) != 0 {
		t.Errorf("queued once dispatched %+v %v", queued, err)
	}
}

// Events for every subscribed endpoint are listed for an endpoint that subscribes to their
// type, claimed or not, until they are marked dispatched: a first attempt in flight is
// visible before its history row.
func TestQueuedDeliveriesListSubscribedEventsUntilDispatched(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	other := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	ended, ready, test, elsewhere := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		for _, ev := range []events.Event{
			{ID: ended, AccountID: tenant.Account.ID, Type: events.CallEnded, Body: []byte(`{}`), CreatedAt: at},
			{ID: ready, AccountID: tenant.Account.ID, Type: events.TranscriptReady, Body: []byte(`{}`), CreatedAt: at.Add(time.Second)},
			{ID: elsewhere, AccountID: other.Account.ID, Type: events.CallEnded, Body: []byte(`{}`), CreatedAt: at},
		} {
			if _, err := tx.EnqueueEvents(ctx, []events.Event{ev}); err != nil {
				return err
			}
		}
		return tx.EnqueueEventFor(ctx, events.Event{ID: test, AccountID: tenant.Account.ID, Type: events.Test,
			Body: []byte(`{}`), CreatedAt: at.Add(2 * time.Second)}, "whep-b")
	}); err != nil {
		t.Fatal(err)
	}
	list := func(f store.QueuedFilter) []uuid.UUID {
		t.Helper()
		f.EndpointPublicID, f.Since = "whep-a", at
		if f.Limit == 0 {
			f.Limit = 100
		}
		qs, err := st.QueuedDeliveriesFor(ctx, tenant.Account.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		ids := []uuid.UUID{}
		for _, q := range qs {
			if q.Resend || q.OutboxID != q.EventID {
				t.Errorf("not a resend, listed as %+v", q)
			}
			ids = append(ids, q.EventID)
		}
		return ids
	}
	both := []string{events.CallEnded, events.TranscriptReady}
	for _, tc := range []struct {
		name string
		f    store.QueuedFilter
		want []uuid.UUID
	}{
		{"one subscription", store.QueuedFilter{Subscribed: []string{events.CallEnded}}, []uuid.UUID{ended}},
		{"two, newest first", store.QueuedFilter{Subscribed: both}, []uuid.UUID{ready, ended}},
		{"no subscription listed (paused)", store.QueuedFilter{}, []uuid.UUID{}},
		{"one event", store.QueuedFilter{Subscribed: both, EventID: ended}, []uuid.UUID{ended}},
		{"limit", store.QueuedFilter{Subscribed: both, Limit: 1}, []uuid.UUID{ready}},
	} {
		if got := list(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}
	// Claimed, with first attempts in flight: still listed.
	if evs, err := st.ClaimEvents(ctx, 10, at.Add(time.Minute), time.Minute); err != nil || len(evs) != 4 {
		t.Fatalf("claim %+v %v", evs, err)
	}
	if got := list(store.QueuedFilter{Subscribed: both}); !slices.Equal(got, []uuid.UUID{ready, ended}) {
		t.Errorf("claimed: listed %v", got)
	}
	if err := st.MarkEventsDispatched(ctx, []uuid.UUID{ended}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := list(store.QueuedFilter{Subscribed: both}); !slices.Equal(got, []uuid.UUID{ready}) {
		t.Errorf("once one is dispatched: listed %v", got)
	}
}
