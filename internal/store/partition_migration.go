package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
)

// Migration 00030 turns the outbox (events) and the delivery history into tables range-
// partitioned by created_at, so that old data goes by dropping whole partitions (see
// partitions.go and internal/retention). It runs on a live database without stopping
// ingestion for more than a moment:
//
//  1. everything slow happens first, under locks that let inserts and updates through: the
//     new unique indexes are built CONCURRENTLY and a CHECK (created_at < boundary) is added
//     NOT VALID and then VALIDATEd (a scan under SHARE UPDATE EXCLUSIVE);
//  2. one short transaction then renames the old table, creates the partitioned table under the
//     old name and ATTACHes the old table as the partition of everything before the boundary:
//     the validated CHECK proves the bound and the indexes exist, so ATTACH scans and builds
//     nothing. Its locks are taken with a short lock_timeout and retried, so a long
//     transaction in the way never makes inserts queue behind the migration.
//
// The previous release keeps working on the new schema (expand only):
//   - events keeps its name and columns; its statements (INSERT ... ON CONFLICT DO NOTHING, the
//     claim's FOR UPDATE SKIP LOCKED, the updates by id, the NOTIFY trigger) run on the
//     partitioned table as before. One event of a type per call can no longer be a unique index
//     (it would have to include created_at); call_events_once, filled by a BEFORE INSERT trigger
//     that drops the repeated row, keeps it for both releases.
//   - webhook_deliveries keeps its name, its rows and its UNIQUE (delivery_name), which the
//     previous release names in ON CONFLICT (delivery_name): it becomes the partition of the new
//     parent webhook_delivery_history that covers everything before the migration day plus
//     PreviousReleaseWindow, so rows written by either release land in it until then.
//
// Why not pg_partman: the same two steps would still be ours (it does not partition a live
// table without copying it), it needs the extension installed on every server (tests start
// their own PostgreSQL from the distribution's packages), and what remains — creating the
// next partitions and dropping expired ones — is a few statements a leader runs.

// PreviousReleaseWindow is how long after migration 00030 the previous release may still
// write delivery history (into the partition webhook_deliveries).
const PreviousReleaseWindow = 7 * 24 * time.Hour

// Names of the partitioned tables and of the partitions the migration made of the old ones.
const (
	EventsTable          = "events"
	DeliveryHistoryTable = "webhook_delivery_history"
	eventsBefore         = "events_before_partitioning"
	historyBefore        = "webhook_deliveries"
)

// migrationPartitionWidth is the width of the partitions the migration creates ahead.
const migrationPartitionWidth = 24 * time.Hour

// migrationPartitionsAhead is how far ahead of now the migration creates partitions.
const migrationPartitionsAhead = 3 * 24 * time.Hour

// lockTimeout bounds how long one attempt of a step waits for a lock (inserts queue behind a
// waiting ACCESS EXCLUSIVE request, so the wait must stay short); the step is then retried.
const lockTimeout = 200 * time.Millisecond

var partitionOutboxMigration = goose.NewGoMigration(30, &goose.GoFunc{RunDB: partitionOutbox}, nil)

func partitionOutbox(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	var now time.Time
	if err := conn.QueryRowContext(ctx, `SELECT now()`).Scan(&now); err != nil {
		return err
	}
	// The old tables' rows all lie before the boundary; a margin of an hour keeps a replica
	// whose clock runs a little ahead inside it.
	boundary := now.UTC().Add(time.Hour).Truncate(24 * time.Hour).Add(24 * time.Hour)
	if err := partitionEvents(ctx, conn, boundary); err != nil {
		return fmt.Errorf("partition events: %w", err)
	}
	if err := partitionHistory(ctx, conn, boundary.Add(PreviousReleaseWindow)); err != nil {
		return fmt.Errorf("partition webhook_deliveries: %w", err)
	}
	for from := boundary; from.Before(now.Add(migrationPartitionsAhead)); from = from.Add(migrationPartitionWidth) {
		if err := createPartition(ctx, conn, EventsTable, from, from.Add(migrationPartitionWidth)); err != nil {
			return err
		}
	}
	return nil
}

func partitionEvents(ctx context.Context, conn *sql.Conn, boundary time.Time) error {
	if done, err := isPartitioned(ctx, conn, EventsTable); err != nil || done {
		return err
	}
	if err := execSteps(ctx, conn, `CREATE TABLE IF NOT EXISTS call_events_once (
			call_id bigint NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
			type    text NOT NULL,
			PRIMARY KEY (call_id, type))`,
		`COMMENT ON TABLE call_events_once IS 'One event of a type per call (call.ended, voicemail.received, transcript.ready): a row per event queued, kept with the call.'`,
		`CREATE OR REPLACE FUNCTION events_once_per_call() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.call_id IS NULL OR NEW.type NOT IN ('call.ended', 'transcript.ready', 'voicemail.received') THEN
				RETURN NEW;
			END IF;
			INSERT INTO call_events_once (call_id, type) VALUES (NEW.call_id, NEW.type) ON CONFLICT DO NOTHING;
			IF FOUND THEN
				RETURN NEW;
			END IF;
			RETURN NULL;
		END $$`); err != nil {
		return err
	}
	// The trigger first, then the backfill: a call event inserted meanwhile is in one or the other.
	if err := withLockRetry(ctx, conn, `CREATE OR REPLACE TRIGGER events_once_per_call BEFORE INSERT ON events
		FOR EACH ROW EXECUTE FUNCTION events_once_per_call()`); err != nil {
		return err
	}
	if err := execSteps(ctx, conn, `INSERT INTO call_events_once (call_id, type)
		SELECT call_id, type FROM events WHERE call_id IS NOT NULL AND type IN ('call.ended', 'transcript.ready', 'voicemail.received')
		ON CONFLICT DO NOTHING`); err != nil {
		return err
	}
	if err := createIndexConcurrently(ctx, conn, "events_id_created_at",
		`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS events_id_created_at ON events (id, created_at)`); err != nil {
		return err
	}
	if err := boundOldTable(ctx, conn, EventsTable, "events_before_partitioning_bound", boundary); err != nil {
		return err
	}
	return withLockRetry(ctx, conn,
		`LOCK TABLE events IN ACCESS EXCLUSIVE MODE`,
		`ALTER TABLE events RENAME TO `+eventsBefore,
		`ALTER TABLE `+eventsBefore+` RENAME CONSTRAINT events_pkey TO events_before_partitioning_id`,
		`ALTER TABLE `+eventsBefore+` ADD CONSTRAINT events_before_partitioning_pkey UNIQUE USING INDEX events_id_created_at`,
		`ALTER INDEX events_undispatched RENAME TO events_before_partitioning_undispatched`,
		`DROP TRIGGER events_realtime ON `+eventsBefore,
		`DROP TRIGGER events_once_per_call ON `+eventsBefore,
		`CREATE TABLE events (LIKE `+eventsBefore+` INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)`,
		`ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id, created_at),
			ADD CONSTRAINT events_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id) ON DELETE CASCADE,
			ADD CONSTRAINT events_call_id_fkey FOREIGN KEY (call_id) REFERENCES calls(id) ON DELETE SET NULL`,
		`CREATE INDEX events_undispatched ON events (created_at) WHERE dispatched_at IS NULL`,
		`CREATE TRIGGER events_once_per_call BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_once_per_call()`,
		`CREATE TRIGGER events_realtime AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION realtime_outbox_event()`,
		fmt.Sprintf(`ALTER TABLE events ATTACH PARTITION %s FOR VALUES FROM (MINVALUE) TO (%s)`, eventsBefore, quoteTime(boundary)),
		`ALTER TABLE `+eventsBefore+` DROP CONSTRAINT events_before_partitioning_bound`,
		`CREATE TABLE events_default PARTITION OF events DEFAULT`,
		`COMMENT ON TABLE events_default IS 'Rows no dated partition covers: should stay empty (alert SwitchboardRetentionDefaultPartitionRows).'`,
	)
}

func partitionHistory(ctx context.Context, conn *sql.Conn, boundary time.Time) error {
	if done, err := isPartitioned(ctx, conn, DeliveryHistoryTable); err != nil || done {
		return err
	}
	if err := createIndexConcurrently(ctx, conn, "webhook_deliveries_name_created_at",
		`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_name_created_at ON webhook_deliveries (delivery_name, created_at)`); err != nil {
		return err
	}
	if err := boundOldTable(ctx, conn, historyBefore, "webhook_deliveries_bound", boundary); err != nil {
		return err
	}
	if err := execSteps(ctx, conn, `CREATE OR REPLACE FUNCTION webhook_delivery_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			-- A delivery is recorded once: a second write (a repeat after a crash) keeps the first row.
			-- Its rows lie within a day of each other (a delivery's retries end within hours).
			IF EXISTS (SELECT 1 FROM webhook_delivery_history WHERE delivery_name = NEW.delivery_name
					AND created_at > NEW.created_at - interval '1 day' AND created_at < NEW.created_at + interval '1 day') THEN
				RETURN NULL;
			END IF;
			RETURN NEW;
		END $$`); err != nil {
		return err
	}
	return withLockRetry(ctx, conn,
		`LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE`,
		`CREATE TABLE webhook_delivery_history (LIKE webhook_deliveries INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)`,
		`ALTER SEQUENCE webhook_deliveries_id_seq OWNED BY webhook_delivery_history.id`,
		`ALTER TABLE webhook_delivery_history ADD CONSTRAINT webhook_delivery_history_account_id_fkey
			FOREIGN KEY (account_id) REFERENCES accounts(id) ON DELETE CASCADE`,
		`CREATE UNIQUE INDEX webhook_delivery_history_name ON webhook_delivery_history (delivery_name, created_at)`,
		`CREATE INDEX webhook_delivery_history_endpoint_created ON webhook_delivery_history (account_id, endpoint_public_id, created_at DESC)`,
		`CREATE INDEX webhook_delivery_history_event ON webhook_delivery_history (account_id, endpoint_public_id, event_id)`,
		`CREATE TRIGGER webhook_delivery_once BEFORE INSERT ON webhook_delivery_history FOR EACH ROW EXECUTE FUNCTION webhook_delivery_once()`,
		fmt.Sprintf(`ALTER TABLE webhook_delivery_history ATTACH PARTITION webhook_deliveries FOR VALUES FROM (MINVALUE) TO (%s)`, quoteTime(boundary)),
		`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_bound`,
		`CREATE TABLE webhook_delivery_history_default PARTITION OF webhook_delivery_history DEFAULT`,
		`COMMENT ON TABLE webhook_delivery_history IS 'Finished webhook deliveries, partitioned by day of created_at and dropped after the retention window.'`,
	)
}

// boundOldTable proves every row of table lies before boundary without blocking writes: the
// CHECK is added NOT VALID (a moment's lock), then validated by a scan that lets writes through.
func boundOldTable(ctx context.Context, conn *sql.Conn, table, constraint string, boundary time.Time) error {
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = $1 AND conrelid = $2::regclass)`,
		constraint, table).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if err := withLockRetry(ctx, conn, fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s CHECK (created_at < %s) NOT VALID`,
			table, constraint, quoteTime(boundary))); err != nil {
			return err
		}
	}
	return execSteps(ctx, conn, fmt.Sprintf(`ALTER TABLE %s VALIDATE CONSTRAINT %s`, table, constraint))
}

// createIndexConcurrently builds an index without blocking writes; an invalid one left by an
// earlier, interrupted run is dropped first.
func createIndexConcurrently(ctx context.Context, conn *sql.Conn, name, create string) error {
	var invalid bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND NOT i.indisvalid)`, name).Scan(&invalid); err != nil {
		return err
	}
	if invalid {
		if err := execSteps(ctx, conn, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return err
		}
	}
	return execSteps(ctx, conn, create)
}

func isPartitioned(ctx context.Context, conn *sql.Conn, table string) (bool, error) {
	var partitioned bool
	err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = $1 AND relkind = 'p')`, table).Scan(&partitioned)
	return partitioned, err
}

// execSteps runs each statement on its own (autocommit).
func execSteps(ctx context.Context, conn *sql.Conn, stmts ...string) error {
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

// withLockRetry runs stmts in one transaction whose lock waits end after lockTimeout; a
// transaction that timed out waiting is rolled back and tried again a little later.
func withLockRetry(ctx context.Context, conn *sql.Conn, stmts ...string) error {
	const attempts = 300
	for attempt := 1; ; attempt++ {
		err := inLockTimedTx(ctx, conn, stmts)
		if err == nil || !isLockTimeout(err) || attempt == attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt)*20*time.Millisecond, time.Second)):
		}
	}
}

func inLockTimedTx(ctx context.Context, conn *sql.Conn, stmts []string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, lockTimeout.Milliseconds())); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return tx.Commit()
}

func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

func quoteTime(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02 15:04:05Z07:00") + "'"
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
