package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// calls.sentiment and calls.urgency follow the call's latest transcript (migration 00009),
// through inserts, updates and deletes, without touching the call counts.
func TestCallFollowsLatestTranscript(t *testing.T) {
	ctx := context.Background()
	st, acct, callID := storeWithOneCall(t)
	var countsBefore int64
	if err := st.SQL().QueryRow(ctx, `SELECT sum(calls) FROM call_counts_hourly WHERE account_id = $1`, acct.ID).Scan(&countsBefore); err != nil {
		t.Fatal(err)
	}
	want := func(step string, sentiment, urgency *string) {
		t.Helper()
		var s, u *string
		if err := st.SQL().QueryRow(ctx, `SELECT sentiment, urgency FROM calls WHERE id = $1`, callID).Scan(&s, &u); err != nil {
			t.Fatal(err)
		}
		if !equal(s, sentiment) || !equal(u, urgency) {
			t.Errorf("%s: call has sentiment %v urgency %v, want %v %v", step, deref(s), deref(u), deref(sentiment), deref(urgency))
		}
	}
	neg, pos, high, low := "negative", "positive", "high", "low"
	transcript := func(sentiment, urgency string) int64 {
		rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &callID, Kind: "call", StorageKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := st.SQL().QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, call_id, sentiment, urgency)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, acct.ID, rec.ID, callID, sentiment, urgency).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	want("no transcript", nil, nil)
	first := transcript(neg, high)
	want("first transcript", &neg, &high)
	second := transcript(pos, low)
	want("a later transcript wins", &pos, &low)
	if _, err := st.SQL().Exec(ctx, `UPDATE transcripts SET sentiment = 'neutral' WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	want("an older transcript changes", &pos, &low)
	if _, err := st.SQL().Exec(ctx, `DELETE FROM transcripts WHERE id = $1`, second); err != nil {
		t.Fatal(err)
	}
	neutral := "neutral"
	want("the latest is deleted", &neutral, &high)
	if _, err := st.SQL().Exec(ctx, `DELETE FROM transcripts WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	want("none left", nil, nil)
	var countsAfter int64
	if err := st.SQL().QueryRow(ctx, `SELECT sum(calls) FROM call_counts_hourly WHERE account_id = $1`, acct.ID).Scan(&countsAfter); err != nil {
		t.Fatal(err)
	}
	if countsAfter != countsBefore {
		t.Errorf("call counts moved from %d to %d", countsBefore, countsAfter)
	}
}

// storeWithOneCall is a fresh store with one account and one answered call (its id).
func storeWithOneCall(t *testing.T) (*store.Store, store.Account, int64) {
	t.Helper()
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Sentiment Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	callID, _, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, FromE164: "+447700900001", ToE164: "+442079460001",
		Disposition: "answered", StartedAt: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return st, acct, callID
}

func equal(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// The total of a list filtered by sentiment or urgency comes from call_counts_sentiment_daily
// (migration 00013); it must equal the calls the list finds as transcripts come and go.
func TestSentimentTotalsFollowTranscripts(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Moods Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	exec := sqlExecutor(t, st)
	// 240 calls over ten days; three in four get a transcript with a sentiment and urgency.
	exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, disposition, filtered, started_at)
		SELECT $1, 'call_mood_' || g, '+447700900' || lpad(g::text, 3, '0'), '+442070000001',
			(ARRAY['answered', 'voicemail', 'busy'])[1 + g % 3], g % 11 = 0,
			timestamptz '2026-07-01 00:00Z' + g * interval '1 hour'
		FROM generate_series(1, 240) g`, acct.ID)
	exec(`INSERT INTO recordings (account_id, public_id, call_id, kind, storage_key)
		SELECT account_id, 'rec_' || public_id, id, 'call', 'k' FROM calls WHERE account_id = $1`, acct.ID)
	exec(`INSERT INTO transcripts (account_id, recording_id, call_id, sentiment, urgency)
		SELECT c.account_id, r.id, c.id, (ARRAY['positive', 'neutral', 'negative'])[1 + c.id % 3],
			CASE WHEN c.id % 5 = 0 THEN NULL ELSE (ARRAY['low', 'normal', 'high'])[1 + c.id % 7 % 3] END
		FROM calls c JOIN recordings r ON r.call_id = c.id WHERE c.account_id = $1 AND c.id % 4 <> 0`, acct.ID)

	day := func(d, h int) *time.Time { v := time.Date(2026, 7, d, h, 0, 0, 0, time.UTC); return &v }
	periods := []struct{ from, to *time.Time }{{nil, nil}, {day(3, 0), day(7, 0)}, {day(3, 5), nil}, {nil, day(6, 13)}}
	check := func(step string) {
		t.Helper()
		for _, activity := range []string{"business", "all"} {
			for _, status := range []string{"", "answered"} {
				for _, mood := range [][2]string{{"negative", ""}, {"", "high"}, {"positive", "low"}, {"neutral", ""}} {
					for i, p := range periods {
						checkTotalMatchesList(t, st, acct.ID, store.CallFilter{Activity: activity, Status: status,
							Sentiment: mood[0], Urgency: mood[1], From: p.from, To: p.to},
							fmt.Sprintf("%s: activity=%s status=%q mood=%v period %d", step, activity, status, mood, i))
					}
				}
			}
		}
	}
	check("transcripts made")
	exec(`UPDATE transcripts SET sentiment = 'negative', urgency = 'high' WHERE account_id = $1 AND id % 2 = 0`, acct.ID)
	check("sentiments changed")
	exec(`DELETE FROM transcripts WHERE account_id = $1 AND id % 3 = 0`, acct.ID)
	check("transcripts deleted")
	exec(`UPDATE calls SET disposition = 'answered', started_at = started_at + interval '2 days' WHERE account_id = $1 AND id % 5 = 0`, acct.ID)
	check("calls moved")
	exec(`DELETE FROM calls WHERE account_id = $1 AND id % 7 = 0`, acct.ID)
	check("calls deleted")
}

// A transcript write that leaves the call's sentiment and urgency as they are (a new pending
// transcript, the transcription charge's case) issues no UPDATE of calls: even one changing no
// row would run calls' four statement triggers (1.3 ms under the account lock).
func TestTranscriptWriteThatChangesNothingLeavesCallsAlone(t *testing.T) {
	ctx := context.Background()
	st, acct, callID := storeWithOneCall(t)
	rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &callID, Kind: "call", StorageKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := st.SQL().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Count UPDATE statements on calls, as calls' own statement triggers see them.
	exec(`CREATE TABLE calls_update_statements (at timestamptz)`)
	exec(`CREATE FUNCTION log_calls_update() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO calls_update_statements VALUES (now()); RETURN NULL; END $$`)
	exec(`CREATE TRIGGER calls_update_log AFTER UPDATE ON calls FOR EACH STATEMENT EXECUTE FUNCTION log_calls_update()`)
	updates := func() int {
		t.Helper()
		var n int
		if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM calls_update_statements`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var transcriptID int64
	if err := st.SQL().QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, call_id, status, summary_status)
		VALUES ($1, $2, $3, 'pending', 'pending') RETURNING id`, acct.ID, rec.ID, callID).Scan(&transcriptID); err != nil {
		t.Fatal(err)
	}
	if n := updates(); n != 0 {
		t.Errorf("a pending transcript for a call without sentiment ran %d UPDATEs of calls, want 0", n)
	}
	exec(`UPDATE transcripts SET sentiment = 'positive' WHERE id = $1`, transcriptID)
	var sentiment *string
	if err := st.SQL().QueryRow(ctx, `SELECT sentiment FROM calls WHERE id = $1`, callID).Scan(&sentiment); err != nil {
		t.Fatal(err)
	}
	if n := updates(); n != 1 || sentiment == nil || *sentiment != "positive" {
		t.Errorf("after the summary: %d UPDATEs, call sentiment %v; want 1 and positive", n, deref(sentiment))
	}
	exec(`UPDATE transcripts SET urgency = NULL WHERE id = $1`, transcriptID) // urgency was already NULL
	if n := updates(); n != 1 {
		t.Errorf("a write that changes nothing on the call ran %d UPDATEs in all, want still 1", n)
	}
}
