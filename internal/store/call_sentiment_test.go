package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
)

// calls.sentiment and calls.urgency follow the call's latest transcript (migration 00009),
// through inserts, updates and deletes, without touching the call counts.
func TestCallFollowsLatestTranscript(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Follow Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	callID, _, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, FromE164: "+447700900001", ToE164: "+442079460001",
		Disposition: "answered", StartedAt: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	var countsBefore int64
	if err := st.Pool.QueryRow(ctx, `SELECT sum(calls) FROM call_counts_hourly WHERE account_id = $1`, acct.ID).Scan(&countsBefore); err != nil {
		t.Fatal(err)
	}
	want := func(step string, sentiment, urgency *string) {
		t.Helper()
		var s, u *string
		if err := st.Pool.QueryRow(ctx, `SELECT sentiment, urgency FROM calls WHERE id = $1`, callID).Scan(&s, &u); err != nil {
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
		if err := st.Pool.QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, call_id, sentiment, urgency)
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
	if _, err := st.Pool.Exec(ctx, `UPDATE transcripts SET sentiment = 'neutral' WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	want("an older transcript changes", &pos, &low)
	if _, err := st.Pool.Exec(ctx, `DELETE FROM transcripts WHERE id = $1`, second); err != nil {
		t.Fatal(err)
	}
	neutral := "neutral"
	want("the latest is deleted", &neutral, &high)
	if _, err := st.Pool.Exec(ctx, `DELETE FROM transcripts WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	want("none left", nil, nil)
	var countsAfter int64
	if err := st.Pool.QueryRow(ctx, `SELECT sum(calls) FROM call_counts_hourly WHERE account_id = $1`, acct.ID).Scan(&countsAfter); err != nil {
		t.Fatal(err)
	}
	if countsAfter != countsBefore {
		t.Errorf("call counts moved from %d to %d", countsBefore, countsAfter)
	}
}

func equal(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
