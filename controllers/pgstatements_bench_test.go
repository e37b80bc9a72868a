/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// pgStatements reports where PostgreSQL's time went during a benchmark case, when the cluster
// was started with pg_stat_statements loaded:
//
//	PGCLUSTER_OPTIONS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c track_functions=pl"
//
// Without it, it does nothing.
type pgStatements struct {
	tb testing.TB
	st *store.Store
	on bool
}

// startPGStatements resets the counters, so the report covers what follows.
func startPGStatements(tb testing.TB, st *store.Store) *pgStatements {
	ctx := context.Background()
	p := &pgStatements{tb: tb, st: st}
	db := storetest.SQL(tb, st)
	var libs string
	if err := db.QueryRow(ctx, `SHOW shared_preload_libraries`).Scan(&libs); err != nil || !strings.Contains(libs, "pg_stat_statements") {
		return p
	}
	if _, err := db.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		fmt.Printf("  pg_stat_statements: %v\n", err)
		return p
	}
	_, err := db.Exec(ctx, `SELECT pg_stat_statements_reset(), pg_stat_reset()`)
	p.on = err == nil
	return p
}

// print lists the top statements by total execution time (nested ones, run by triggers,
// included) and the trigger functions' own time, per report when reports > 0.
func (p *pgStatements) print(reports int) {
	if !p.on {
		return
	}
	ctx := context.Background()
	rows, err := storetest.SQL(p.tb, p.st).Query(ctx, `SELECT total_exec_time, total_plan_time, calls, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 15`)
	if err != nil {
		fmt.Printf("  pg_stat_statements: %v\n", err)
		return
	}
	defer rows.Close()
	fmt.Printf("  PostgreSQL statements by total time (ms per report over %d reports | planning, with pg_stat_statements.track_planning=on | calls | rows | statement):\n", reports)
	for rows.Next() {
		var (
			total, plan float64
			calls, nrow int64
			query       string
		)
		if err := rows.Scan(&total, &plan, &calls, &nrow, &query); err != nil {
			fmt.Printf("  pg_stat_statements: %v\n", err)
			return
		}
		fmt.Printf("    %7.3f | %7.3f | %6d | %7d | %s\n", total/float64(reports), plan/float64(reports), calls, nrow, query)
	}
	frows, err := storetest.SQL(p.tb, p.st).Query(ctx, `SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions
		ORDER BY total_time DESC LIMIT 8`)
	if err != nil {
		fmt.Printf("  pg_stat_user_functions: %v\n", err)
		return
	}
	defer frows.Close()
	fmt.Println("  PL/pgSQL functions (ms per report total | self | calls | function):")
	for frows.Next() {
		var (
			name        string
			calls       int64
			total, self float64
		)
		if err := frows.Scan(&name, &calls, &total, &self); err != nil {
			return
		}
		fmt.Printf("    %7.3f | %7.3f | %6d | %s\n", total/float64(reports), self/float64(reports), calls, name)
	}
}
