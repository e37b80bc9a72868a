package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// queryLog records every query a pool runs, so a test can EXPLAIN exactly what the store sent.
type queryLog struct {
	mu      sync.Mutex
	queries []loggedQuery
}

type loggedQuery struct {
	sql  string
	args []any
}

func (l *queryLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, loggedQuery{d.SQL, d.Args})
	return ctx
}

func (l *queryLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns and forgets the queries logged so far.
func (l *queryLog) take() []loggedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}

// The inbox lists read a page through an index in list order: no sequential scan of the
// table and no sort of the account's rows, whatever the filter. Each case names the index
// that serves it (00001 or 00006_inbox_indexes).
func TestInboxListPlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewDatabaseURL(t)
	log := &queryLog{}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := store.OnPool(pool)

	// Two accounts of 40,000 rows in each list; account 1 has a user with 40,000 notifications,
	// a tenth of them unread.
	var accts [2]store.Account
	var users [2]store.User
	for i := range accts {
		if accts[i], err = s.CreateAccount(ctx, store.NewAccount{Name: "A", Plan: "business"}); err != nil {
			t.Fatal(err)
		}
		if users[i], err = s.CreateUser(ctx, store.NewUser{AccountID: accts[i].ID, Name: "U", Email: "u@example.com", Role: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 40000
	for i, a := range accts {
		for _, q := range []string{
			`INSERT INTO tasks (account_id, public_id, text, status, created_at)
				SELECT $1::bigint, format('task_%s_%s', $1::bigint, g), 't', CASE WHEN g % 3 = 0 THEN 'done' ELSE 'open' END, now() - g * interval '1 minute'
				FROM generate_series(1, $2) g`,
			`INSERT INTO job_requests (account_id, public_id, status, created_at)
				SELECT $1::bigint, format('job_%s_%s', $1::bigint, g), CASE WHEN g % 100 = 0 THEN 'declined' ELSE (ARRAY['new', 'confirmed', 'done'])[g % 3 + 1] END, now() - g * interval '1 minute'
				FROM generate_series(1, $2) g`,
			`INSERT INTO message_slips (account_id, public_id, from_e164, received_at)
				SELECT $1::bigint, format('slip_%s_%s', $1::bigint, g), '+4477009' || lpad(g::text, 5, '0'), now() - g * interval '1 minute'
				FROM generate_series(1, $2) g`,
			`INSERT INTO ledger_entries (account_id, type, amount_pence, balance_after_pence, created_at)
				SELECT $1::bigint, 'topup', 1, g, now() - g * interval '1 minute' FROM generate_series(1, $2) g`,
		} {
			if _, err := s.SQL().Exec(ctx, q, a.ID, n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.SQL().Exec(ctx, `INSERT INTO notifications (id, account_id, user_id, type, title, read_at, created_at)
			SELECT gen_random_uuid(), $1, $2, 'x', 'x', CASE WHEN g % 10 = 0 THEN NULL ELSE now() END, now() - g * interval '1 minute'
			FROM generate_series(1, $3) g`, a.ID, users[i].ID, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SQL().Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}

	acct, user := accts[0].ID, users[0].ID
	weekAgo := time.Now().AddDate(0, 0, -7)
	cases := []struct {
		name, table string
		index       string // one of these, separated by |
		run         func() error
	}{
		{"tasks open", "tasks", "tasks_account_status_created|tasks_account_created", func() error { _, _, err := s.ListTasks(ctx, acct, "open", 25, 0); return err }},
		{"tasks all", "tasks", "tasks_account_created", func() error { _, _, err := s.ListTasks(ctx, acct, "all", 25, 0); return err }},
		{"job requests open", "job_requests", "job_requests_account_created|job_requests_account_status_created", func() error {
			_, _, err := s.ListJobRequests(ctx, acct, []string{"new", "confirmed"}, 20, 0)
			return err
		}},
		{"job requests all", "job_requests", "job_requests_account_created", func() error { _, _, err := s.ListJobRequests(ctx, acct, nil, 20, 0); return err }},
		{"job requests done", "job_requests", "job_requests_account_created|job_requests_account_status_created", func() error {
			_, _, err := s.ListJobRequests(ctx, acct, []string{"done"}, 20, 0)
			return err
		}},
		{"job requests declined (rare)", "job_requests", "job_requests_account_status_created", func() error {
			_, _, err := s.ListJobRequests(ctx, acct, []string{"declined"}, 20, 0)
			return err
		}},
		{"notifications", "notifications", "notifications_user_created", func() error {
			_, _, _, err := s.ListNotifications(ctx, acct, user, false, 25, 0)
			return err
		}},
		{"notifications unread", "notifications", "notifications_user_unread_created", func() error {
			_, _, _, err := s.ListNotifications(ctx, acct, user, true, 25, 0)
			return err
		}},
		{"slips", "message_slips", "message_slips_account_received", func() error {
			_, _, err := s.ListMessageSlips(ctx, acct, store.SlipFilter{}, 20, 0)
			return err
		}},
		{"slips 7d", "message_slips", "message_slips_account_received", func() error {
			_, _, err := s.ListMessageSlips(ctx, acct, store.SlipFilter{From: &weekAgo}, 20, 0)
			return err
		}},
		{"ledger", "ledger_entries", "ledger_entries_account_created", func() error { _, _, err := s.ListLedgerEntries(ctx, acct, 25, 0); return err }},
	}
	for _, c := range cases {
		log.take()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var list *loggedQuery
		for _, q := range log.take() {
			if strings.Contains(q.sql, "ORDER BY") {
				list = &q
			}
		}
		if list == nil {
			t.Fatalf("%s: no list query was logged", c.name)
		}
		plan := explain(t, s, list.sql, list.args)
		usesIndex := false
		for _, ix := range strings.Split(c.index, "|") {
			usesIndex = usesIndex || strings.Contains(plan, "Index Scan using "+ix+" on "+c.table)
		}
		if !usesIndex || strings.Contains(plan, "Seq Scan on "+c.table) || strings.Contains(plan, "Sort Key") {
			t.Errorf("%s: want an index scan of %s in list order, got:\n%s", c.name, c.index, plan)
		}
	}
}

func explain(t *testing.T, s *store.Store, sql string, args []any) string {
	t.Helper()
	rows, err := s.SQL().Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
