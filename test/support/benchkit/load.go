/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Offer makes n requests with send: all at once from 32 clients (rate 0), or rate a second
// from up to 32 at a time (a platform's bounded client; unbounded, the requests would hold
// every pool connection the delivery side needs). It returns the rate achieved.
func Offer(n, rate int, send func(ctx context.Context, hc *http.Client, i int)) float64 {
	start := time.Now()
	ctx := context.Background()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var wg sync.WaitGroup
	if rate == 0 {
		next := make(chan int)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					send(ctx, hc, i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
	} else {
		tick := time.Second / time.Duration(rate)
		clients := make(chan struct{}, 32)
		for i := range n {
			time.Sleep(time.Until(start.Add(time.Duration(i) * tick)))
			clients <- struct{}{}
			wg.Add(1)
			go func() { defer wg.Done(); defer func() { <-clients }(); send(ctx, hc, i) }()
		}
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// Events is BENCH_EVENTS (default 10,000).
func Events() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_EVENTS")); err == nil && v > 0 {
		return v
	}
	return 10000
}

// Case is one case of the end-to-end delivery benchmarks: N events to Endpoints endpoints,
// all at once (Rate 0) or Rate a second.
type Case struct {
	Name      string
	Endpoints int
	N         int
	Rate      int
}

// EndToEndCases are the cases every end-to-end delivery benchmark runs, so that Switchboard
// and its peers are measured alike; scale (BENCH_EVENTS, 10,000 = the full cases) scales them
// down: burst 5,000, paced 30 s each, fan-out 1,000.
func EndToEndCases(scale int) []Case {
	return []Case{
		{"burst-1-endpoint", 1, min(5000, scale), 0},
		{"paced-200-1-endpoint", 1, min(6000, 30*scale/50), 200},
		{"paced-400-1-endpoint", 1, min(12000, 30*scale/25), 400},
		{"fan-out-5-endpoints", 5, min(1000, scale), 0},
	}
}
