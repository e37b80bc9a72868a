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
		return recordCallReports(t, st, in)
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

// A group's events are stored with their calls' ids, in order, only for the calls the group
// stored: a report of a call stored before gets none. A group closed without Commit stores
// nothing and lets the next group take its calls' locks.
func TestCallReportsStoreTheEventsOfNewCalls(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Group Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460778", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 11, 20, 9, 0, 0, 123456789, time.UTC)
	report := func(ref string, rec *store.NewRecording) store.CallReport {
		return store.CallReport{PlatformRef: ref, Recording: rec, NewCall: store.NewCall{AccountID: acct.ID, NumberID: &num.ID,
			FromE164: "+447700900123", ToE164: num.E164, Disposition: "voicemail", StartedAt: started, DurationSeconds: 30}}
	}
	earlier := recordCallReports(t, st, []store.CallReport{report("earlier", nil)})

	// Closed without Commit: nothing stored.
	keys := []store.CallReportKey{{ToE164: num.E164, PlatformRef: "new"}, {ToE164: num.E164, PlatformRef: "earlier"}}
	abandoned, err := st.BeginCallReports(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := abandoned.Number(num.E164); !ok || n.AccountID != acct.ID {
		t.Fatalf("number %+v found %v, want the account's", n, ok)
	}
	if _, ok := abandoned.Number("+442079460999"); ok {
		t.Error("a number nobody has was found")
	}
	abandoned.Plan([]store.CallReport{report("new", nil)})
	abandoned.Close(ctx)

	tx, err := st.BeginCallReports(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close(ctx)
	in := []store.CallReport{
		report("new", &store.NewRecording{Kind: "voicemail", StorageKey: "a/new.wav", SizeBytes: 10, DurationSeconds: 5}),
		report("earlier", nil),
	}
	planned := tx.Plan(in)
	if planned[0].Duplicate || planned[1].Duplicate || planned[0].RecordingPublicID == "" {
		t.Fatalf("planned %+v", planned)
	}
	at := time.Date(2026, 11, 20, 9, 1, 0, 0, time.UTC)
	ev := func(typ string) events.Event {
		return events.Event{ID: uuid.New(), AccountID: acct.ID, Type: typ, Body: []byte(`{"type":"` + typ + `"}`), CreatedAt: at}
	}
	evs := []events.Event{ev(events.CallEnded), ev(events.VoicemailReceived), ev(events.CallEnded)}
	out, queued, err := tx.Commit(ctx, evs, []int{0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Duplicate || out[0].CallPublicID != planned[0].CallPublicID || out[0].CallID == 0 ||
		out[0].RecordingPublicID != planned[0].RecordingPublicID || out[0].RecordingID == 0 {
		t.Errorf("the new call: %+v, planned %+v", out[0], planned[0])
	}
	if !out[1].Duplicate || out[1].CallID != earlier[0].CallID || out[1].CallPublicID != earlier[0].CallPublicID {
		t.Errorf("the call stored before: %+v, want %+v as a duplicate", out[1], earlier[0])
	}
	if len(queued) != 3 || !queued[0] || !queued[1] || queued[2] {
		t.Errorf("queued %v, want [true true false]", queued)
	}

	rows, err := st.SQL().Query(ctx, `SELECT id, call_id, type FROM events WHERE account_id = $1 ORDER BY created_at, id`, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[uuid.UUID]int64{}
	for rows.Next() {
		var id uuid.UUID
		var callID int64
		var typ string
		if err := rows.Scan(&id, &callID, &typ); err != nil {
			t.Fatal(err)
		}
		stored[id] = callID
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored[evs[0].ID] != out[0].CallID || stored[evs[1].ID] != out[0].CallID {
		t.Errorf("events stored %v, want %s and %s with call %d", stored, evs[0].ID, evs[1].ID, out[0].CallID)
	}
	var recordingID, calls int64
	var created time.Time
	if err := st.SQL().QueryRow(ctx, `SELECT r.id, r.created_at, (SELECT count(*) FROM calls WHERE account_id = $2)
		FROM recordings r WHERE r.public_id = $1`, out[0].RecordingPublicID, acct.ID).Scan(&recordingID, &created, &calls); err != nil {
		t.Fatal(err)
	}
	if recordingID != out[0].RecordingID || !created.Equal(planned[0].RecordingCreated) || calls != 2 {
		t.Errorf("recording %d created %s (%d calls), want %d created %s (2 calls)", recordingID, created, calls,
			out[0].RecordingID, planned[0].RecordingCreated)
	}
	countsMatchCalls(t, st, "a group with events")
}
