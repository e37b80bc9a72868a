package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// maxIngestStall bounds the longest statement of the ingestion loops while the partitioning
// migration runs. Each of its lock waits ends after 200 ms and is retried, and the locked
// steps themselves take milliseconds; the rest is a loaded test machine's scheduling.
const maxIngestStall = 2 * time.Second

// The partitioning migration on a live database of a million events and a million history
// rows: the previous release's statements (the outbox insert, the claim, the history insert
// with ON CONFLICT (delivery_name)) keep running in loops throughout, none waits longer than
// maxIngestStall, none fails, and every row is kept. SWITCHBOARD_MIGRATION_ROWS changes the
// seed size.
func TestPartitionMigrationOnALiveDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a million rows")
	}
	rows := 1_000_000
	if v := os.Getenv("SWITCHBOARD_MIGRATION_ROWS"); v != "" {
		var err error
		if rows, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	url := storetest.NewEmptyDatabaseURL(t)
	if err := store.MigrateTo(ctx, url, 29); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Live", Plan: "team"})
	if err != nil {
		t.Fatal(err)
	}
	exec := sqlExecutor(t, st)
	seeded := time.Now()
	// A call for one event in a hundred, so one-event-per-call has rows to carry over; bodies
	// of 700 bytes like a call.ended payload, dispatched an hour after they were made.
	exec(`INSERT INTO calls (account_id, public_id, direction, from_e164, to_e164, started_at, disposition)
		SELECT $1, 'call_seed_' || g, 'inbound', '+447700900000', '+447700900001', now() - interval '1 day', 'answered'
		FROM generate_series(1, $2) g`, acct.ID, rows/100)
	exec(`INSERT INTO events (id, account_id, type, body, call_id, created_at, dispatched_at)
		SELECT gen_random_uuid(), $1, 'call.ended', convert_to(rpad('{"event":"call.ended"}', 700, ' '), 'UTF8'),
			CASE WHEN g <= $3 THEN (SELECT min(id) FROM calls) + g - 1 END,
			now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval + interval '1 hour'
		FROM generate_series(1, $2) g`, acct.ID, rows, rows/100)
	exec(`INSERT INTO webhook_deliveries (account_id, endpoint_public_id, delivery_name, event_id, event_type, status, attempts,
			created_at, finished_at)
		SELECT $1, 'wh_seed', 'seed-' || g, gen_random_uuid(), 'call.ended', 'succeeded', 1,
			now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval
		FROM generate_series(1, $2) g`, acct.ID, rows)
	exec(`ANALYZE`)
	t.Logf("seeded %d events (%d with a call) and %d history rows in %s", rows, rows/100, rows, time.Since(seeded).Round(time.Millisecond))

	// The previous release's statements, verbatim, in loops until the migration is done.
	loops := map[string]func(ctx context.Context, i int) error{
		"outbox insert": func(ctx context.Context, i int) error {
			return pgx.BeginFunc(ctx, st.SQL(), func(tx pgx.Tx) error {
				r, err := tx.Query(ctx, `INSERT INTO events (id, account_id, type, body, call_id, created_at)
					SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bytea[], $5::bigint[], $6::timestamptz[])
					ON CONFLICT DO NOTHING RETURNING id`,
					[]uuid.UUID{uuid.New()}, []int64{acct.ID}, []string{"call.ended"}, [][]byte{[]byte(`{}`)}, []*int64{nil},
					[]time.Time{time.Now()})
				if err != nil {
					return err
				}
				r.Close()
				return r.Err()
			})
		},
		"outbox claim": func(ctx context.Context, _ int) error {
			r, err := st.SQL().Query(ctx, `WITH claim AS (
					SELECT id FROM events
					WHERE dispatched_at IS NULL AND (claimed_until IS NULL OR claimed_until <= $2)
					ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
				UPDATE events e SET claimed_until = $3, claims = e.claims + 1 FROM claim, accounts a
				WHERE e.id = claim.id AND a.id = e.account_id
				RETURNING e.id`, 10, time.Now(), time.Now().Add(time.Second))
			if err != nil {
				return err
			}
			r.Close()
			return r.Err()
		},
		"history insert": func(ctx context.Context, i int) error {
			_, err := st.SQL().Exec(ctx, `INSERT INTO webhook_deliveries (account_id, endpoint_public_id, delivery_name, event_id,
					event_type, status, attempts, response_code, last_error, created_at, finished_at)
				SELECT a.id, 'wh_live', $2, $3, 'call.ended', 'succeeded', 1, 200, NULL, $4, $4 FROM accounts a WHERE a.public_id = $1
				ON CONFLICT (delivery_name) DO NOTHING`, acct.PublicID, fmt.Sprintf("live-%d", i), uuid.New(), time.Now())
			return err
		},
	}
	type result struct {
		n       int
		longest time.Duration
		errs    []error
	}
	results := map[string]*result{}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		stop     atomic.Bool
		loopsCtx = context.Background()
	)
	for name, run := range loops {
		r := &result{}
		results[name] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				began := time.Now()
				err := run(loopsCtx, i)
				took := time.Since(began)
				mu.Lock()
				r.n++
				r.longest = max(r.longest, took)
				if err != nil && len(r.errs) < 5 {
					r.errs = append(r.errs, err)
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	began := time.Now()
	versions, err := store.Migrate(ctx, url)
	took := time.Since(began)
	time.Sleep(time.Second) // the old statements after the migration too
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("migrations %v took %s", versions, took.Round(time.Millisecond))
	for name, r := range results {
		t.Logf("%s: %d statements, longest %s", name, r.n, r.longest.Round(time.Millisecond))
		if len(r.errs) > 0 {
			t.Errorf("%s failed: %v", name, r.errs)
		}
		if r.longest > maxIngestStall {
			t.Errorf("%s waited %s during the migration, more than %s", name, r.longest, maxIngestStall)
		}
		if r.n < 10 {
			t.Errorf("%s ran only %d times", name, r.n)
		}
	}

	var events, history, once int
	if err := st.SQL().QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_delivery_history),
		(SELECT count(*) FROM call_events_once)`).Scan(&events, &history, &once); err != nil {
		t.Fatal(err)
	}
	if want := rows + results["outbox insert"].n; events != want {
		t.Errorf("%d events after the migration, want %d", events, want)
	}
	if want := rows + results["history insert"].n; history != want {
		t.Errorf("%d history rows after the migration, want %d", history, want)
	}
	if once != rows/100 {
		t.Errorf("call_events_once has %d rows, want one per call event (%d)", once, rows/100)
	}
	// One event of a type per call still holds, on the partitioned table too.
	var queued int
	if err := st.SQL().QueryRow(ctx, `WITH ins AS (INSERT INTO events (id, account_id, type, body, call_id, created_at)
		SELECT gen_random_uuid(), account_id, type, body, call_id, now() FROM events WHERE call_id IS NOT NULL LIMIT 10
		ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM ins`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != 0 {
		t.Errorf("%d repeated call events were queued again", queued)
	}
}
