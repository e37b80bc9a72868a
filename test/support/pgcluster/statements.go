package pgcluster

import (
	"context"
	"strings"
	"sync"
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

// WaitSampler counts what the active sessions of a database are waiting for (pg_stat_activity's
// wait_event_type:wait_event, "CPU" when running), sampled every interval until Stop.
type WaitSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen map[string]int
	n    int
}

// SampleWaits starts a WaitSampler on database.
func (c *Cluster) SampleWaits(ctx context.Context, database string, interval time.Duration) (*WaitSampler, error) {
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err != nil {
		return nil, err
	}
	w := &WaitSampler{stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]int{}}
	go func() {
		defer close(w.done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
			if err != nil {
				return
			}
			waits, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			w.mu.Lock()
			w.n++
			for _, e := range waits {
				w.seen[e]++
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// Stop ends the sampling and returns, for each wait, the mean number of active sessions in it
// (sessions seen / samples).
func (w *WaitSampler) Stop() map[string]float64 {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]float64{}
	for e, k := range w.seen {
		out[e] = float64(k) / float64(max(1, w.n))
	}
	return out
}
