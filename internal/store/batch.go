/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package store

import (
	"context"
	"sync"
	"time"
)

// batcher runs fn on batches of the calls made to do while an earlier batch was running:
// an idle batcher runs a call at once (no added latency), a busy one collects the calls that
// arrive meanwhile into the next batch of up to max, with at most running batches at a time.
// This turns many small round trips (and commits) into a few large ones under load.
type batcher[In, Out any] struct {
	fn         func(ctx context.Context, in []In) ([]Out, []error)
	max        int
	maxRunning int

	mu      sync.Mutex
	queue   []*batchCall[In, Out]
	running int
}

type batchCall[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{}
}

// batchTimeout bounds one batch's statements (callers that stop waiting do not cancel the
// batch other callers share).
const batchTimeout = 30 * time.Second

func newBatcher[In, Out any](max, running int, fn func(ctx context.Context, in []In) ([]Out, []error)) *batcher[In, Out] {
	return &batcher[In, Out]{fn: fn, max: max, maxRunning: running}
}

// do queues in and waits for its result.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &batchCall[In, Out]{in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.running < b.maxRunning {
		b.running++
		go b.run()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

func (b *batcher[In, Out]) run() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.max)
		calls := make([]*batchCall[In, Out], n)
		copy(calls, b.queue)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()

		ins := make([]In, n)
		for i, c := range calls {
			ins[i] = c.in
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		outs, errs := b.fn(ctx, ins)
		cancel()
		for i, c := range calls {
			if i < len(outs) {
				c.out = outs[i]
			}
			if i < len(errs) {
				c.err = errs[i]
			}
			close(c.done)
		}
	}
}

// Batcher is the batcher for callers outside the store that group their own transactions
// (the ingestion API's call reports: one transaction for the reports that arrive together).
type Batcher[In, Out any] struct{ b *batcher[In, Out] }

// NewBatcher runs fn on batches of up to max calls, at most running batches at a time.
func NewBatcher[In, Out any](max, running int, fn func(ctx context.Context, in []In) ([]Out, []error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{b: newBatcher(max, running, fn)}
}

// Do queues in, waits for the batch it joined, and returns its result.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) { return b.b.do(ctx, in) }
