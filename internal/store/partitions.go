package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// Partitions of the outbox (events), the delivery history (webhook_delivery_history) and its
// attempts (webhook_delivery_attempts):
// range partitions on created_at, created ahead and dropped whole by the retention maintainer
// (internal/retention). Every statement that changes the partition set waits for its locks at
// most lockTimeout per attempt, so inserts never queue behind it for longer.

// Partition is one partition of a partitioned table.
type Partition struct {
	Name string
	// From and To bound created_at: From <= created_at < To. A zero From is MINVALUE (the
	// partition the migration made of the old table).
	From, To time.Time
	// Default: the DEFAULT partition, which takes rows no dated partition covers.
	Default bool
}

// PartitionedTables are the tables the retention maintainer keeps.
var PartitionedTables = []string{EventsTable, DeliveryHistoryTable, DeliveryAttemptsTable}

// PartitionName is the name of table's partition starting at from.
func PartitionName(table string, from time.Time) string {
	return table + "_p" + from.UTC().Format("20060102t150405")
}

// Partitions lists table's partitions, the dated ones ordered by From, then the default.
func (s *Store) Partitions(ctx context.Context, table string) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT',
			(regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz,
			(regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass
		ORDER BY 2, 3 NULLS FIRST`, table)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	defer rows.Close()
	var ps []Partition
	for rows.Next() {
		var (
			p        Partition
			from, to *time.Time
		)
		if err := rows.Scan(&p.Name, &p.Default, &from, &to); err != nil {
			return nil, err
		}
		if from != nil {
			p.From = from.UTC()
		}
		if to != nil {
			p.To = to.UTC()
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// CreatePartition adds table's partition for [from, to). Rows the DEFAULT partition took for
// that range meanwhile move into it, in the same transaction. An existing partition of that
// name is left as it is.
func (s *Store) CreatePartition(ctx context.Context, table string, from, to time.Time) error {
	return s.withConn(ctx, func(conn *sql.Conn) error { return createPartition(ctx, conn, table, from, to) })
}

// DropPartition detaches and drops table's partition name. For the outbox it refuses
// (ErrUndispatched) while the partition holds an event not yet dispatched.
func (s *Store) DropPartition(ctx context.Context, table, name string) error {
	if table != EventsTable && table != DeliveryHistoryTable && table != DeliveryAttemptsTable {
		return fmt.Errorf("drop partition: unknown table %q", table)
	}
	part := quoteIdent(name)
	if table == EventsTable {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+part+` WHERE dispatched_at IS NULL)`).Scan(&waiting); err != nil {
			return fmt.Errorf("drop partition %s: %w", name, err)
		}
		if waiting {
			return fmt.Errorf("drop partition %s: %w", name, ErrUndispatched)
		}
	}
	return s.withConn(ctx, func(conn *sql.Conn) error {
		return withLockRetry(ctx, conn, `ALTER TABLE `+table+` DETACH PARTITION `+part, `DROP TABLE `+part)
	})
}

// ErrUndispatched: the partition still holds outbox events not yet dispatched.
var ErrUndispatched = errors.New("the partition holds events not yet dispatched")

// DefaultPartitionRows counts (up to limit) the rows table's DEFAULT partition holds: rows
// that arrived with no dated partition for them. It should be 0.
func (s *Store) DefaultPartitionRows(ctx context.Context, table string, limit int) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+quoteIdent(table+"_default")+` LIMIT $1) d`, limit).Scan(&n)
	return n, err
}

// TableBytes is the size of a partitioned table, all its partitions and their indexes and TOAST.
func (s *Store) TableBytes(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree($1::regclass)`, table).Scan(&n)
	return n, err
}

func (s *Store) withConn(ctx context.Context, fn func(*sql.Conn) error) error {
	db := stdlib.OpenDBFromPool(s.pool)
	defer func() { _ = db.Close() }()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	return fn(conn)
}

// createPartition attaches a new, empty table rather than CREATE TABLE ... PARTITION OF,
// which would take an ACCESS EXCLUSIVE lock on the parent: ATTACH takes SHARE UPDATE
// EXCLUSIVE, which inserts pass, and the CHECK spares it a scan of the new table.
func createPartition(ctx context.Context, conn *sql.Conn, table string, from, to time.Time) error {
	name := PartitionName(table, from)
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	bound := fmt.Sprintf(`created_at >= %s AND created_at < %s`, quoteTime(from), quoteTime(to))
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS)`, name, table),
		fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s_bound CHECK (%s)`, name, name, bound),
	}
	// Rows the default partition took for this range move over (there are none unless a
	// partition was missing); the default partition's lock is taken first, as ATTACH would.
	adopt := []string{
		fmt.Sprintf(`LOCK TABLE %s_default IN ACCESS EXCLUSIVE MODE`, table),
		fmt.Sprintf(`INSERT INTO %s SELECT * FROM %s_default WHERE %s`, name, table, bound),
		fmt.Sprintf(`DELETE FROM %s_default WHERE %s`, table, bound),
	}
	attach := []string{
		fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`, table, name, quoteTime(from), quoteTime(to)),
		fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s_bound`, name, name),
	}
	var hasDefault bool
	if err := conn.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, table+"_default").Scan(&hasDefault); err != nil {
		return err
	}
	if hasDefault {
		stmts = append(stmts, adopt...)
	}
	if err := withLockRetry(ctx, conn, append(stmts, attach...)...); err != nil {
		return fmt.Errorf("create partition %s: %w", name, err)
	}
	return nil
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// PruneCallProgress deletes call progress rows (ringing, answered) created before `before`,
// batch rows per statement until none is left; it returns how many it deleted.
func (s *Store) PruneCallProgress(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM call_progress WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM call_progress WHERE created_at < $1 LIMIT $2))`, before, batch)
		if err != nil {
			return total, fmt.Errorf("prune call progress: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

// PruneSwitchOffNotices deletes the claims of switch-off emails made before `before` (one row
// per endpoint and switch-off episode; a claim only stops a second email for that episode).
func (s *Store) PruneSwitchOffNotices(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_switchoff_notices WHERE claimed_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune switch-off notices: %w", err)
	}
	return tag.RowsAffected(), nil
}
