package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// One batch of reports: new calls with and without recordings, two copies of one report in
// the batch, a report of a call stored by an earlier batch, reports without a platform_ref,
// and a call announced ringing first, which keeps the id its progress report named.
func TestRecordCallsInOneBatch(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Batch Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460777", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	report := func(ref string, rec *store.NewRecording) store.CallReport {
		return store.CallReport{PlatformRef: ref, Recording: rec, NewCall: store.NewCall{AccountID: acct.ID, NumberID: &num.ID,
			FromE164: "+447700900123", ToE164: num.E164, Disposition: "answered", StartedAt: started, DurationSeconds: 60}}
	}
	voicemail := func(key string) *store.NewRecording {
		return &store.NewRecording{Kind: "voicemail", StorageKey: key, SizeBytes: 10, DurationSeconds: 5}
	}
	record := func(in []store.CallReport) []store.ReportedCall {
		t.Helper()
		var out []store.ReportedCall
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			var err error
			out, err = tx.RecordCalls(ctx, in)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	earlier := record([]store.CallReport{report("earlier", voicemail("a/earlier.wav"))})
	if earlier[0].Duplicate || earlier[0].RecordingPublicID == "" {
		t.Fatalf("first report: %+v", earlier[0])
	}
	ringingID, _, err := st.ReportCallProgress(ctx, store.CallProgressReport{To: num.E164, PlatformRef: "rang",
		State: "ringing", CreatedAt: started, Body: func(store.ProgressCall) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	if err != nil {
		t.Fatal(err)
	}

	out := record([]store.CallReport{
		report("new", voicemail("a/new.wav")),  // 0
		report("twice", nil),                   // 1
		report("earlier", nil),                 // 2: stored by the batch before
		report("twice", nil),                   // 3: a copy of 1 in the same batch
		report("", nil),                        // 4
		report("", nil),                        // 5
		report("rang", nil),                    // 6
		report("new", voicemail("a/new2.wav")), // 7: a copy of 0 (its audio is not stored again)
	})
	for i, want := range []bool{false, false, true, true, false, false, false, true} {
		if out[i].Duplicate != want || out[i].CallPublicID == "" || out[i].CallID == 0 {
			t.Errorf("report %d: %+v, want Duplicate %v with the call's ids", i, out[i], want)
		}
	}
	if out[0].RecordingPublicID == "" || out[7].CallID != out[0].CallID || out[7].RecordingPublicID != out[0].RecordingPublicID {
		t.Errorf("a copy of a voicemail report in its batch: %+v, first %+v", out[7], out[0])
	}
	if out[3].CallID != out[1].CallID || out[3].CallPublicID != out[1].CallPublicID {
		t.Errorf("copies in one batch: %+v and %+v", out[1], out[3])
	}
	if out[2].CallID != earlier[0].CallID || out[2].RecordingPublicID != earlier[0].RecordingPublicID {
		t.Errorf("a report stored before: %+v, want the call and recording of %+v", out[2], earlier[0])
	}
	if out[4].CallID == out[5].CallID {
		t.Error("two reports without a platform_ref were stored as one call")
	}
	if out[6].CallPublicID != ringingID {
		t.Errorf("the ringing call's final report got %s, want the id %s its progress named", out[6].CallPublicID, ringingID)
	}

	var calls, recordings int
	if err := st.SQL().QueryRow(ctx, `SELECT (SELECT count(*) FROM calls), (SELECT count(*) FROM recordings)`).Scan(&calls, &recordings); err != nil {
		t.Fatal(err)
	}
	if calls != 6 || recordings != 2 {
		t.Errorf("%d calls and %d recordings stored, want 6 and 2", calls, recordings)
	}
	countsMatchCalls(t, st, "a batch of reports")
}

// EnqueueEvents stores a batch of events in order and says which were new: a second event of
// a type for one call is not stored.
func TestEnqueueEvents(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Events Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	callID, _, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, FromE164: "+447700900123", ToE164: "+442079460777",
		Disposition: "answered", StartedAt: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 20, 9, 5, 0, 0, time.UTC)
	ev := func(typ string) events.Event {
		return events.Event{ID: uuid.New(), AccountID: acct.ID, CallID: &callID, Type: typ, Body: []byte(`{}`), CreatedAt: at}
	}
	evs := []events.Event{ev(events.CallEnded), ev(events.VoicemailReceived), ev(events.CallEnded)}
	var queued []bool
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		queued, err = tx.EnqueueEvents(ctx, evs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(queued) != 3 || !queued[0] || !queued[1] || queued[2] {
		t.Errorf("queued %v, want [true true false]", queued)
	}
	var stored int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM events WHERE id = ANY($1)`,
		[]uuid.UUID{evs[0].ID, evs[1].ID, evs[2].ID}).Scan(&stored); err != nil || stored != 2 {
		t.Errorf("%d events stored (%v), want 2", stored, err)
	}
}
