/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// apiserverProfile writes a CPU profile of kube-apiserver (its /debug/pprof, as cluster
// admin) of d to path, in the background.
func apiserverProfile(cfg *rest.Config, path string, d time.Duration) {
	go func() {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
			fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), int(d.Seconds())), nil)
		res, err := hc.Do(req)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, res.Body)
	}()
}

// apiRequests counts kube-apiserver requests on webhook resources by verb (and
// subresource), from its apiserver_request_total metric.
func apiRequests(cfg *rest.Config) map[string]float64 {
	out := map[string]float64{}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return out
	}
	res, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	label := func(line, name string) string {
		i := strings.Index(line, name+`="`)
		if i < 0 {
			return ""
		}
		rest := line[i+len(name)+2:]
		return rest[:strings.IndexByte(rest, '"')]
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		res := label(line, "resource")
		if res != "webhookdeliveries" && res != "webhookendpoints" {
			continue
		}
		key := res + " " + label(line, "verb")
		if sub := label(line, "subresource"); sub != "" {
			key += "/" + sub
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out
}

// requestsSince formats the requests made since before, per delivery.
func requestsSince(cfg *rest.Config, before map[string]float64, deliveries int) string {
	after := apiRequests(cfg)
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{}
	for _, k := range keys {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f (%.2f/delivery)", k, d, d/float64(deliveries)))
		}
	}
	return strings.Join(parts, ", ")
}

// pgStatements, when BENCH_PG_STATEMENTS is set (with PGCLUSTER_OPTIONS="-c
// shared_preload_libraries=pg_stat_statements"), resets pg_stat_statements and returns a
// function that prints the statements that took the most time since, per delivery.
func pgStatements(st *store.Store, deliveries func() int) func() {
	if os.Getenv("BENCH_PG_STATEMENTS") == "" {
		return func() {}
	}
	ctx := context.Background()
	if _, err := st.Pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return func() {}
	}
	if _, err := st.Pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		fmt.Println("  pg_stat_statements:", err)
		return func() {}
	}
	return func() {
		n := float64(max(1, deliveries()))
		rows, err := st.Pool.Query(ctx, `SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 120)
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			ORDER BY total_exec_time DESC LIMIT 12`)
		if err != nil {
			fmt.Println("  pg_stat_statements:", err)
			return
		}
		defer rows.Close()
		fmt.Println("  PostgreSQL statements by execution time (per delivery):")
		for rows.Next() {
			var (
				calls, nrows int64
				ms           float64
				query        string
			)
			if err := rows.Scan(&calls, &ms, &nrows, &query); err != nil {
				fmt.Println("  pg_stat_statements:", err)
				return
			}
			fmt.Printf("    %8d calls (%.3f/delivery) %9.1f ms (%.4f ms/delivery) %8d rows  %s\n", calls, float64(calls)/n, ms, ms/n, nrows, query)
		}
	}
}
