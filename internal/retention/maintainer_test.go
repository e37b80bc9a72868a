package retention

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// The maintainer on a migrated database, its clock moved by hand over two months: partitions
// exist ahead of the clock, expired ones are dropped whole (an undispatched event keeps its
// partition until it is dispatched), a row that found no partition is taken over by the next
// partition created, and call progress older than a day is pruned.
func TestMaintainerKeepsTheWindow(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Retention", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC()
	clk := clocktesting.NewFakeClock(start)
	m := &Maintainer{Store: st, Clock: clk, Log: logr.Discard(),
		Config: Config{Window: 30 * 24 * time.Hour, PartitionWidth: 24 * time.Hour}}

	insertEvent := func(at time.Time, dispatched bool) uuid.UUID {
		t.Helper()
		id := uuid.New()
		var dispatchedAt *time.Time
		if dispatched {
			dispatchedAt = &at
		}
		if _, err := storetest.SQL(t, st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
			VALUES ($1, $2, 'call.ended', '{}', $3, $4)`, id, acct.ID, at, dispatchedAt); err != nil {
			t.Fatal(err)
		}
		return id
	}
	countEvents := func(ids ...uuid.UUID) int {
		var n int
		if err := storetest.SQL(t, st).QueryRow(ctx, `SELECT count(*) FROM events WHERE id = ANY($1)`, ids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func() {
		t.Helper()
		if err := m.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	coveredUntil := func(table string) time.Time {
		t.Helper()
		ps, err := st.Partitions(ctx, table)
		if err != nil {
			t.Fatal(err)
		}
		return CoveredUntil(ps)
	}

	early := insertEvent(start, true)
	stuck := insertEvent(start, false)
	run()
	for _, table := range store.PartitionedTables {
		if until := coveredUntil(table); until.Before(start.Add(3 * 24 * time.Hour)) {
			t.Errorf("%s: partitions end at %s, less than three days ahead of %s", table, until, start)
		}
	}

	// A row far ahead of every partition lands in the default partition, not in an error.
	future := start.Add(50 * 24 * time.Hour)
	late := insertEvent(future, true)
	if n, err := st.DefaultPartitionRows(ctx, store.EventsTable, 10); err != nil || n != 1 {
		t.Fatalf("default partition rows = %d, %v; want 1", n, err)
	}

	// Day by day for 40 days: the window slides, partitions keep three days ahead.
	for range 40 {
		clk.Step(24 * time.Hour)
		run()
		if until := coveredUntil(store.EventsTable); until.Before(clk.Now().Add(3 * 24 * time.Hour)) {
			t.Fatalf("at %s events partitions end at %s", clk.Now(), until)
		}
	}
	// Past the window: the dispatched event's partition would go, but it shares the partition
	// made of the old table with an event never dispatched, so the partition stays.
	if countEvents(early, stuck) != 2 {
		t.Fatal("an expired partition holding an undispatched event was dropped")
	}
	if err := st.MarkEventsDispatched(ctx, []uuid.UUID{stuck}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	run()
	if n := countEvents(early, stuck); n != 0 {
		t.Errorf("%d events older than the window are still kept", n)
	}
	ps, err := st.Partitions(ctx, store.EventsTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !p.Default && !p.To.After(clk.Now().Add(-m.Config.Window)) {
			t.Errorf("partition %s (to %s) outlived the window at %s", p.Name, p.To, clk.Now())
		}
	}
	// History: the partition the migration made of webhook_deliveries goes as well.
	hs, err := st.Partitions(ctx, store.DeliveryHistoryTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hs {
		if p.Name == "webhook_deliveries" {
			t.Errorf("the old history partition (to %s) outlived the window at %s", p.To, clk.Now())
		}
	}

	// Ten days later the partitions reach the far-future row: it moved out of the default.
	clk.Step(10 * 24 * time.Hour)
	run()
	if n, err := st.DefaultPartitionRows(ctx, store.EventsTable, 10); err != nil || n != 0 {
		t.Errorf("default partition rows = %d, %v; want 0 once a partition covers them", n, err)
	}
	if countEvents(late) != 1 {
		t.Error("the row taken over from the default partition is lost")
	}
}

// Call progress rows go a day after they were made; newer ones stay.
func TestPruneCallProgress(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Progress", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := storetest.SQL(t, st).Exec(ctx, `INSERT INTO call_progress (account_id, platform_ref, state, call_public_id, body, created_at)
		SELECT $1, 'ref-' || g, 'ringing', 'call_' || g, '{}', $2::timestamptz - (g || ' minutes')::interval FROM generate_series(1, 3000) g`,
		acct.ID, now); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(now)
	m := &Maintainer{Store: st, Clock: clk, Log: logr.Discard()}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := storetest.SQL(t, st).QueryRow(ctx, `SELECT count(*) FROM call_progress`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	// Rows 1..1439 minutes old stay (the one exactly a day old is on the boundary).
	if left < 1439 || left > 1440 {
		t.Errorf("%d call progress rows left, want those under a day old (1439)", left)
	}
}

// Records of a signing secret shown again go after 90 days; newer ones stay.
func TestPruneSecretReveals(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Reveals", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Owen", Email: "owen@reveals.example", Role: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, age := range []time.Duration{91 * 24 * time.Hour, 89 * 24 * time.Hour} {
		if err := st.RecordSecretReveal(ctx, owner, "whep-a", now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	m := &Maintainer{Store: st, Clock: clocktesting.NewFakeClock(now), Log: logr.Discard()}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := st.SecretReveals(ctx, acct.ID, "whep-a", 10)
	if err != nil || len(left) != 1 || !left[0].At.Equal(now.Add(-89*24*time.Hour)) {
		t.Errorf("after a run the records are %+v (%v); want the 89-day-old one only", left, err)
	}
}
