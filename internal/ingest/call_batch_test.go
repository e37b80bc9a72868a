package ingest_test

import (
	"context"
	"fmt"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"sync"
	"testing"
	"time"
)

// Reports that arrive together are recorded together, and each still gets its own answer:
// the first of two copies of a report 201, the other 200 naming the same call; an unknown
// number 404. Afterwards every stored call has exactly its one call.ended and the count
// tables agree with the calls.
func TestConcurrentCallReportsAreGroupedAndEachAnswered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	var reports []*sent
	add := func(name string, report map[string]any) { reports = append(reports, &sent{name: name, report: report}) }
	for i := range 30 {
		add(fmt.Sprintf("r%d", i), call(fmt.Sprintf("r%d", i), "answered", nil))
	}
	for i := range 5 {
		add(fmt.Sprintf("r%d again", i), call(fmt.Sprintf("r%d", i), "answered", nil))
	}
	for i := range 3 {
		unknown := call(fmt.Sprintf("u%d", i), "answered", nil)
		unknown["to"] = "+442079460999"
		add(fmt.Sprintf("unknown %d", i), unknown)
	}
	for i := range 2 {
		add(fmt.Sprintf("no ref %d", i), call("", "no-answer", nil))
	}

	sendTogether(t, f, reports)

	callIDs := map[string]string{} // report name → call public id
	for _, s := range reports {
		switch {
		case len(s.name) > 7 && s.name[:7] == "unknown":
			if s.status != 404 {
				t.Errorf("%s: %d %v, want 404", s.name, s.status, s.body)
			}
		default:
			if s.status != 201 && s.status != 200 {
				t.Errorf("%s: %d %v, want 201 or 200", s.name, s.status, s.body)
				continue
			}
			events, _ := s.body["events"].([]any)
			dup := s.status == 200
			if s.body["duplicate"] != dup || (dup && len(events) != 0) || (!dup && (len(events) != 1 || events[0] != "call.ended")) {
				t.Errorf("%s: %d %v", s.name, s.status, s.body)
			}
			callIDs[s.name], _ = s.body["call_public_id"].(string)
		}
	}
	for i := range 5 {
		first, again := reports[i], reports[30+i]
		if first.status+again.status != 401 || callIDs[first.name] == "" || callIDs[first.name] != callIDs[again.name] {
			t.Errorf("r%d twice: %d %v and %d %v, want one 201 and one 200 naming the same call", i,
				first.status, first.body, again.status, again.body)
		}
	}

	var calls, groups int
	if err := storetest.SQL(t, f.st).QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM calls WHERE account_id = $1`,
		f.account.ID).Scan(&calls, &groups); err != nil {
		t.Fatal(err)
	}
	if calls != 32 {
		t.Errorf("%d calls stored, want 32 (30 refs and 2 without one)", calls)
	}
	if groups >= calls {
		t.Errorf("%d calls were stored in %d transactions: the reports were not grouped", calls, groups)
	}
	t.Logf("%d calls stored in %d transactions", calls, groups)

	// Each call has exactly one event, call.ended, about itself.
	evs := f.events(t)
	perCall := map[string]int{}
	for _, ev := range evs {
		if ev.Type != "call.ended" {
			t.Errorf("event %s", ev.Type)
		}
		perCall[ev.Body["call"].(map[string]any)["id"].(string)]++
	}
	if len(evs) != 32 || len(perCall) != 32 {
		t.Errorf("%d events about %d calls, want 32 about 32", len(evs), len(perCall))
	}
	for name, id := range callIDs {
		if perCall[id] != 1 {
			t.Errorf("%s (%s): %d events, want 1", name, id, perCall[id])
		}
	}

	// The counts the call list and analytics read agree with the calls: left as deltas by the
	// reports, through the views readers use, and in the tables once folded.
	counts := func(suffix string) {
		t.Helper()
		for _, table := range []string{"call_counts_hourly", "call_counts_daily", "call_counts_local", "call_caller_counts", "call_name_counts"} {
			var counted int
			if err := storetest.SQL(t, f.st).QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM `+table+suffix+` WHERE account_id = $1`,
				f.account.ID).Scan(&counted); err != nil {
				t.Fatal(err)
			}
			if counted != calls {
				t.Errorf("%s counts %d calls, want %d", table+suffix, counted, calls)
			}
		}
	}
	if pending, err := f.st.PendingCallCounts(ctx); err != nil || pending != int64(calls) {
		t.Errorf("%d call-count deltas pending (%v), want %d", pending, err, calls)
	}
	counts("_current")
	if _, err := f.st.FoldCallCounts(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	counts("")
}

// A report the database refuses fails its group's transaction; the group is then recorded
// report by report, so that report alone gets 500 and the others are stored and announced.
func TestARefusedReportFailsAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var reports []*sent
	for i := range 10 {
		reports = append(reports, &sent{name: fmt.Sprintf("r%d", i), report: call(fmt.Sprintf("r%d", i), "answered", nil)})
	}
	// A refusal only the database makes (a constraint this test adds to its own database),
	// standing for any failure validation cannot foresee.
	if _, err := storetest.SQL(t, f.st).Exec(ctx, `ALTER TABLE calls ADD CONSTRAINT test_refuse_caller CHECK (caller_name <> 'Refuse Me')`); err != nil {
		t.Fatal(err)
	}
	refused := call("refused", "answered", nil)
	refused["caller_name"] = "Refuse Me"
	reports = append(reports, &sent{name: "refused", report: refused})
	sendTogether(t, f, reports)

	for _, s := range reports {
		want := 201
		if s.name == "refused" {
			want = 500
		}
		if s.status != want {
			t.Errorf("%s: %d %v, want %d", s.name, s.status, s.body, want)
		}
	}
	var calls, announced int
	if err := storetest.SQL(t, f.st).QueryRow(ctx, `SELECT (SELECT count(*) FROM calls WHERE account_id = $1),
			(SELECT count(DISTINCT call_id) FROM events WHERE account_id = $1 AND type = 'call.ended')`,
		f.account.ID).Scan(&calls, &announced); err != nil {
		t.Fatal(err)
	}
	if calls != 10 || announced != 10 || len(f.events(t)) != 10 {
		t.Errorf("%d calls, %d announced, %d events; want 10 of each", calls, announced, len(f.events(t)))
	}
}

// sent is a report sent by sendTogether, and its answer.
type sent struct {
	name   string
	report map[string]any
	status int
	body   map[string]any
}

// sendTogether sends every report at once while inserts into calls are held, so they queue
// behind the first group and are recorded in a few groups.
func sendTogether(t *testing.T, f *fixture, reports []*sent) {
	t.Helper()
	ctx := context.Background()
	hold, err := storetest.SQL(t, f.st).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `LOCK TABLE calls IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range reports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.status, s.body = f.post(t, token, "/platform/v1/calls", s.report)
		}()
	}
	waitFor(t, "a group to wait for the lock", func() bool {
		var waiting int
		err := storetest.SQL(t, f.st).QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'calls'::regclass AND NOT granted`).Scan(&waiting)
		return err == nil && waiting > 0
	})
	time.Sleep(300 * time.Millisecond) // the other requests reach the queue
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
