package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// accountOutboxIndexMigration indexes the undispatched outbox by account, for the fair claim
// (ClaimEvents): each pass finds the accounts with events waiting and takes a share of each
// account's oldest, without reading the others' backlogs. The outbox is partitioned, and a
// plain CREATE INDEX on it would block every insert while it reads each partition, so the
// index is made on the parent alone (invalid until complete), built on each partition
// concurrently and attached. Partitions made later get theirs when they are attached.
var accountOutboxIndexMigration = goose.NewGoMigration(70, &goose.GoFunc{RunDB: indexOutboxByAccount},
	&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, `DROP INDEX IF EXISTS events_undispatched_account`)
		return err
	}})

// outboxAccountIndex is the columns and predicate of the account index, the same on the
// parent and every partition (ATTACH requires it).
const outboxAccountIndex = `(account_id, created_at, id) WHERE dispatched_at IS NULL`

func indexOutboxByAccount(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if err := withLockRetry(ctx, conn, `CREATE INDEX IF NOT EXISTS events_undispatched_account ON ONLY events `+outboxAccountIndex); err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'events'::regclass AND NOT EXISTS (
			SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
			WHERE ii.inhparent = 'events_undispatched_account'::regclass AND x.indrelid = c.oid)
		ORDER BY c.relname`)
	if err != nil {
		return err
	}
	var partitions []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return err
		}
		partitions = append(partitions, name)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, p := range partitions {
		index := p + "_undispatched_account"
		if err := createIndexConcurrently(ctx, conn, index,
			fmt.Sprintf(`CREATE INDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s`, index, p, outboxAccountIndex)); err != nil {
			return fmt.Errorf("index %s by account: %w", p, err)
		}
		if err := withLockRetry(ctx, conn, fmt.Sprintf(`ALTER INDEX events_undispatched_account ATTACH PARTITION %s`, index)); err != nil {
			return fmt.Errorf("attach %s: %w", index, err)
		}
	}
	return nil
}
