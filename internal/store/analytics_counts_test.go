package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// analyticsNow is "now" for these tests: 15 July 2026, 10:30 UTC.
var analyticsNow = time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC)

// countedCall is a call as GET /analytics counts it.
type countedCall struct {
	started   time.Time
	numberID  *int64
	filtered  bool
	disp      string
	forward   int64
	sentiment *string
}

// analyticsFromCalls is the analytics of q worked out in Go from every call of the account, the
// reference that CallAnalytics (from call_counts_local) must equal.
func analyticsFromCalls(t *testing.T, st *store.Store, q store.AnalyticsQuery) store.Analytics {
	t.Helper()
	ctx := context.Background()
	rows, _ := st.SQL().Query(ctx, `SELECT started_at, number_id, filtered, disposition, forward_seconds, sentiment
		FROM calls WHERE account_id = $1`, q.AccountID)
	calls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (countedCall, error) {
		var c countedCall
		err := r.Scan(&c.started, &c.numberID, &c.filtered, &c.disp, &c.forward, &c.sentiment)
		return c, err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = st.SQL().Query(ctx, `SELECT id, public_id, e164, label FROM numbers
		WHERE account_id = $1 AND status <> 'released' ORDER BY e164, id`, q.AccountID)
	type number struct {
		id int64
		store.AnalyticsNumber
	}
	numbers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (number, error) {
		var n number
		err := r.Scan(&n.id, &n.PublicID, &n.E164, &n.Label)
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var only *int64
	for _, n := range numbers {
		if n.PublicID == q.NumberPublicID {
			only = &n.id
		}
	}
	from, to, dates := store.AnalyticsWindow(q.Now, q.Location, q.Days)
	out := store.Analytics{Days: q.Days, ByDay: map[string]int{}, ByHour: make([]int, 24), ByNumber: []store.AnalyticsNumber{}}
	for _, d := range dates {
		out.ByDay[d] = 0
	}
	var seconds int64
	for _, c := range calls {
		if c.started.Before(from) || !c.started.Before(to) {
			continue
		}
		for i := range numbers {
			if !c.filtered && c.numberID != nil && *c.numberID == numbers[i].id {
				numbers[i].Total++
				if c.disp == "answered" {
					numbers[i].Answered++
				}
			}
		}
		if only != nil && (c.numberID == nil || *c.numberID != *only) {
			continue
		}
		s := &out.Summary
		if c.filtered {
			s.Filtered++
			continue
		}
		local := c.started.In(q.Location)
		out.ByDay[local.Format(time.DateOnly)]++
		out.ByHour[local.Hour()]++
		s.Total++
		switch c.disp {
		case "answered":
			s.Answered++
			seconds += c.forward
		case "no-answer", "busy", "failed":
			s.Missed++
		case "voicemail":
			s.Voicemail++
		case "blocked":
			s.Blocked++
		}
		if c.sentiment != nil {
			switch *c.sentiment {
			case "positive":
				out.Sentiment.Positive++
			case "neutral":
				out.Sentiment.Neutral++
			case "negative":
				out.Sentiment.Negative++
			}
		}
	}
	if s := &out.Summary; s.Total > 0 {
		s.AnswerRate = int((200*int64(s.Answered) + int64(s.Total)) / (2 * int64(s.Total)))
		if s.Answered > 0 {
			s.AvgForwardSeconds = int((2*seconds + int64(s.Answered)) / (2 * int64(s.Answered)))
		}
	}
	for _, n := range numbers {
		out.ByNumber = append(out.ByNumber, n.AnalyticsNumber)
	}
	return out
}

// checkAnalytics compares CallAnalytics with the counts over calls for every window, with and
// without each number, in zone.
func checkAnalytics(t *testing.T, st *store.Store, step string, accountID int64, zone string, numberPIDs ...string) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, days := range []int{7, 30, 90} {
		for _, num := range append([]string{""}, numberPIDs...) {
			q := store.AnalyticsQuery{AccountID: accountID, NumberPublicID: num, Days: days, Location: loc, Now: analyticsNow}
			got, err := st.CallAnalytics(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %s days=%d number=%q: %v", step, zone, days, num, err)
			}
			if want := analyticsFromCalls(t, st, q); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s days=%d number=%q:\n got %+v\nwant %+v", step, zone, days, num, got, want)
			}
		}
	}
}

func setAccountZone(t *testing.T, st *store.Store, accountID int64, zone string) {
	t.Helper()
	if _, err := st.SQL().Exec(context.Background(), `UPDATE accounts SET time_zone = $2 WHERE id = $1`, accountID, zone); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, st *store.Store, sql string, args ...any) {
	t.Helper()
	if _, err := st.SQL().Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// call_counts_local (migration 00010) stays equal to counts over the calls themselves through
// single inserts, COPY, sentiment copied from transcripts, updates, deletes, numbers deleted and
// released, and changes of the account's zone, including zones not a whole hour from UTC and
// days of 23 and 25 hours.
func TestAnalyticsCountsStayExact(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	// Kathmandu is UTC+5:45: no UTC hour lies within one local hour.
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Counts Ltd", Plan: plans.Business, TimeZone: "Asia/Kathmandu"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var pids []string
	for i := range 3 {
		n, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: fmt.Sprintf("+97714000%03d", i), Label: fmt.Sprintf("L%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids, pids = append(ids, n.ID), append(pids, n.PublicID)
	}
	theirs, err := st.CreateNumber(ctx, store.NewNumber{AccountID: other.ID, E164: "+442079460777", Label: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	checkAnalytics(t, st, "no calls", acct.ID, "Asia/Kathmandu", pids...)

	// Single inserts on both sides of local midnights and hours (18:15 UTC is 00:00 in
	// Kathmandu), filtered, without a number, every disposition.
	create := func(at time.Time, number *int64, disp string, filtered bool, forward int) int64 {
		t.Helper()
		id, _, err := st.CreateCall(ctx, store.NewCall{AccountID: acct.ID, NumberID: number, FromE164: "+9779800000001",
			ToE164: "+9771400000", Disposition: disp, Filtered: filtered, StartedAt: at, ForwardSeconds: forward})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	edge := time.Date(2026, 7, 14, 18, 15, 0, 0, time.UTC)
	single := []int64{
		create(edge.Add(-time.Second), &ids[0], "answered", false, 40),
		create(edge, &ids[0], "answered", false, 21),
		create(edge.Add(30*time.Minute), &ids[1], "no-answer", false, 0),
		create(edge.Add(45*time.Minute), nil, "busy", false, 0),
		create(edge.Add(2*time.Hour), &ids[1], "answered", true, 300),
		create(time.Date(2026, 7, 8, 18, 14, 59, 0, time.UTC), &ids[2], "voicemail", false, 0), // last second before the 7-day window
		create(time.Date(2026, 7, 8, 18, 15, 0, 0, time.UTC), &ids[2], "blocked", false, 0),    // its first second
		create(time.Date(2026, 4, 16, 18, 14, 0, 0, time.UTC), &ids[0], "failed", false, 0),    // a minute before the 90-day window
		create(time.Date(2026, 4, 16, 18, 15, 0, 0, time.UTC), &ids[0], "in-progress", false, 0),
		create(analyticsNow, &ids[2], "answered", false, 17),
	}
	if _, _, err := st.CreateCall(ctx, store.NewCall{AccountID: other.ID, NumberID: &theirs.ID, FromE164: "+447700900001",
		ToE164: "+442079460777", Disposition: "answered", StartedAt: edge}); err != nil {
		t.Fatal(err)
	}
	checkAnalytics(t, st, "single inserts", acct.ID, "Asia/Kathmandu", pids...)

	// COPY in batches (statement triggers over many rows), with transcripts whose sentiment is
	// copied onto the calls in one UPDATE.
	if err := seed.BulkCalls(ctx, st, acct.ID, ids, 3000, seed.BulkOptions{Now: analyticsNow, History: 100 * 24 * time.Hour,
		TranscribedEvery: 3, Batch: 1000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if err := seed.BulkCalls(ctx, st, other.ID, []int64{theirs.ID}, 500, seed.BulkOptions{Now: analyticsNow, TranscribedEvery: 2, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	var withSentiment int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM calls WHERE account_id = $1 AND sentiment IS NOT NULL AND NOT filtered`,
		acct.ID).Scan(&withSentiment); err != nil || withSentiment < 100 {
		t.Fatalf("bulk calls with a sentiment: %d (%v)", withSentiment, err)
	}
	checkAnalytics(t, st, "COPY", acct.ID, "Asia/Kathmandu", pids...)

	// A call's sentiment follows its transcripts: added, changed, superseded, deleted.
	rec, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &single[1], Kind: "call", StorageKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var tr int64
	if err := st.SQL().QueryRow(ctx, `INSERT INTO transcripts (account_id, recording_id, call_id, sentiment) VALUES ($1, $2, $3, 'negative')
		RETURNING id`, acct.ID, rec.ID, single[1]).Scan(&tr); err != nil {
		t.Fatal(err)
	}
	checkAnalytics(t, st, "transcript added", acct.ID, "Asia/Kathmandu", pids...)
	exec(t, st, `UPDATE transcripts SET sentiment = 'positive' WHERE id = $1`, tr)
	checkAnalytics(t, st, "sentiment changed", acct.ID, "Asia/Kathmandu", pids...)
	rec2, err := st.CreateRecording(ctx, store.NewRecording{AccountID: acct.ID, CallID: &single[1], Kind: "call", StorageKey: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, st, `INSERT INTO transcripts (account_id, recording_id, call_id, sentiment) VALUES ($1, $2, $3, 'neutral')`, acct.ID, rec2.ID, single[1])
	checkAnalytics(t, st, "later transcript", acct.ID, "Asia/Kathmandu", pids...)
	exec(t, st, `DELETE FROM transcripts WHERE call_id = $1`, single[1])
	checkAnalytics(t, st, "transcripts deleted", acct.ID, "Asia/Kathmandu", pids...)
	exec(t, st, `UPDATE transcripts SET sentiment = CASE sentiment WHEN 'positive' THEN 'negative' ELSE 'positive' END
		WHERE account_id = $1 AND id % 2 = 0`, acct.ID)
	checkAnalytics(t, st, "many sentiments changed", acct.ID, "Asia/Kathmandu", pids...)

	// Updates that move calls between days, hours, numbers, dispositions and filtered.
	exec(t, st, `UPDATE calls SET started_at = started_at + interval '7 hours 30 minutes' WHERE account_id = $1 AND id % 5 = 0`, acct.ID)
	exec(t, st, `UPDATE calls SET disposition = 'answered', forward_seconds = forward_seconds + 9 WHERE account_id = $1 AND id % 7 = 1`, acct.ID)
	exec(t, st, `UPDATE calls SET filtered = NOT filtered WHERE account_id = $1 AND id % 11 = 2`, acct.ID)
	exec(t, st, `UPDATE calls SET number_id = $2 WHERE account_id = $1 AND id % 13 = 3`, acct.ID, ids[2])
	exec(t, st, `UPDATE calls SET caller_name = 'Renamed' WHERE account_id = $1`, acct.ID) // counts nothing
	checkAnalytics(t, st, "calls updated", acct.ID, "Asia/Kathmandu", pids...)

	// A released number leaves by_number (its calls still count); a deleted one turns its calls
	// into calls to no number.
	exec(t, st, `UPDATE numbers SET status = 'released' WHERE id = $1`, ids[1])
	checkAnalytics(t, st, "number released", acct.ID, "Asia/Kathmandu", pids[0], pids[2])
	exec(t, st, `DELETE FROM numbers WHERE id = $1`, ids[1])
	checkAnalytics(t, st, "number deleted", acct.ID, "Asia/Kathmandu", pids[0], pids[2])

	exec(t, st, `DELETE FROM calls WHERE account_id = $1 AND id % 4 = 0`, acct.ID)
	checkAnalytics(t, st, "calls deleted", acct.ID, "Asia/Kathmandu", pids[0], pids[2])

	// A change of zone recounts the account. London and Lord Howe (UTC+10:30, +11 in its summer,
	// a half-hour change) have days of 23 and 25 hours within 90 days of the "now"s used here.
	for _, zone := range []string{"America/St_Johns", "Australia/Lord_Howe", "Europe/London", "UTC"} {
		setAccountZone(t, st, acct.ID, zone)
		checkAnalytics(t, st, "zone "+zone, acct.ID, zone, pids[0], pids[2])
		create(analyticsNow.Add(-30*time.Hour), &ids[0], "answered", false, 5)
		checkAnalytics(t, st, "insert in "+zone, acct.ID, zone, pids[0], pids[2])
	}
	for _, now := range []time.Time{time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 4, 5, 12, 0, 0, 0, time.UTC)} {
		for _, zone := range []string{"Europe/London", "Australia/Lord_Howe"} {
			setAccountZone(t, st, acct.ID, zone)
			saved := analyticsNow
			analyticsNow = now
			checkAnalytics(t, st, "days of 23 and 25 hours", acct.ID, zone, pids[0])
			analyticsNow = saved
		}
	}

	// A zone other than the account's (as when the application falls back to Europe/London for a
	// zone it cannot load) is counted from calls, and as exactly.
	setAccountZone(t, st, acct.ID, "Asia/Kolkata")
	checkAnalytics(t, st, "another zone than the account's", acct.ID, "America/New_York", pids[0])
	// A zone PostgreSQL does not know is kept as Europe/London, and does not stop calls.
	setAccountZone(t, st, acct.ID, "Mars/Olympus_Mons")
	create(analyticsNow.Add(-2*time.Hour), &ids[0], "answered", false, 5)
	checkAnalytics(t, st, "unknown zone", acct.ID, "Europe/London", pids[0])

	// The other account's calls are its own.
	checkAnalytics(t, st, "other account", other.ID, "Europe/London", theirs.PublicID)

	// Deleting an account takes its rows; TRUNCATE empties the table.
	var n int
	exec(t, st, `DELETE FROM accounts WHERE id = $1`, other.ID)
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM call_counts_local WHERE account_id = $1`, other.ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("deleted account: %d rows left (%v)", n, err)
	}
	exec(t, st, `TRUNCATE calls CASCADE`)
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM call_counts_local`).Scan(&n); err != nil || n != 0 {
		t.Errorf("after TRUNCATE: %d rows left (%v)", n, err)
	}
	checkAnalytics(t, st, "truncated", acct.ID, "Europe/London", pids[0])
}

// Calls stored while the account's zone changes (the recount under an exclusive lock, the
// triggers under a shared one) end up counted in the final zone, each once.
func TestAnalyticsCountsConcurrentZoneChange(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Busy Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	num, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460555", Label: "Main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.BulkCalls(ctx, st, acct.ID, []int64{num.ID}, 2000, seed.BulkOptions{Now: analyticsNow, TranscribedEvery: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 3 {
		wg.Go(func() {
			for i := range 40 {
				// Each call in a transaction of its own that lasts a little while.
				err := pgx.BeginFunc(ctx, st.SQL(), func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO calls (account_id, public_id, number_id, from_e164, to_e164, disposition, started_at)
						VALUES ($1, $2, $3, '+447700900001', '+442079460555', 'answered', $4)`, acct.ID, store.NewPublicID(store.PrefixCall),
						num.ID, time.Date(2026, 7, 14, 18+w, i, 0, 0, time.UTC)); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `SELECT pg_sleep(0.002)`)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 12 {
			zone := []string{"Asia/Kolkata", "America/New_York", "Asia/Kathmandu"}[i%3]
			if _, err := st.SQL().Exec(ctx, `UPDATE accounts SET time_zone = $2 WHERE id = $1`, acct.ID, zone); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkAnalytics(t, st, "after concurrent writes", acct.ID, "Asia/Kathmandu", num.PublicID)
}
