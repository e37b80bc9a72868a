package pgcluster

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Statement is one normalised statement's totals from pg_stat_statements.
type Statement struct {
	Query      string
	Calls      int64
	Rows       int64
	Total      time.Duration // execution time summed over its calls
	SharedHits int64
}

// ResetStatements clears pg_stat_statements, so that TopStatements covers what follows. It
// reports false, doing nothing, when the server was not started with the module loaded
// (PGCLUSTER_OPTIONS="-c shared_preload_libraries=pg_stat_statements"; measurement only).
func (c *Cluster) ResetStatements(ctx context.Context, database string) (bool, error) {
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var libs string
	if err := conn.QueryRow(ctx, `SHOW shared_preload_libraries`).Scan(&libs); err != nil || !strings.Contains(libs, "pg_stat_statements") {
		return false, err
	}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false, err
	}
	_, err = conn.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err == nil, err
}

// TopStatements is the limit statements of database that took the most execution time since
// ResetStatements.
func (c *Cluster) TopStatements(ctx context.Context, database string, limit int) ([]Statement, error) {
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 120), calls, rows, total_exec_time, shared_blks_hit
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Statement, error) {
		var s Statement
		var ms float64
		err := row.Scan(&s.Query, &s.Calls, &s.Rows, &ms, &s.SharedHits)
		s.Total = time.Duration(ms * float64(time.Millisecond))
		return s, err
	})
}
