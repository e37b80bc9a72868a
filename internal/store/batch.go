/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package store

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// batcher runs fn on batches of the calls made to do while an earlier batch was running:
// an idle batcher runs a call at once (no added latency), a busy one collects the calls that
// arrive meanwhile into the next batch of up to max, with at most running batches at a time.
// This turns many small round trips (and commits) into a few large ones under load.
//
// A batcher made with lingering waits, before each batch that is not full yet, up to its
// linger for more calls: for writes nobody is waiting to see (a delivery's history row, once
// the receiver has its request), where a few rows a statement cost far less than one each.
type batcher[In, Out any] struct {
	fn         func(ctx context.Context, in []In) ([]Out, []error)
	max        int
	maxRunning int
	linger     time.Duration
	clock      clock.Clock
	full       chan struct{} // a call that filled the queue during a linger

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

// lingering makes b wait up to linger (on clk) for a batch to fill before running it.
func (b *batcher[In, Out]) lingering(linger time.Duration, clk clock.Clock) *batcher[In, Out] {
	b.linger, b.clock, b.full = linger, clk, make(chan struct{}, 1)
	return b
}

// do queues in and waits for its result.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &batchCall[In, Out]{in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.full != nil && len(b.queue) == b.max {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
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
		b.wait()
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

// wait holds a batch that is not full for the linger, or until a call fills it.
func (b *batcher[In, Out]) wait() {
	if b.linger <= 0 {
		return
	}
	b.mu.Lock()
	select {
	case <-b.full: // left from a queue that filled while no batch lingered
	default:
	}
	n := len(b.queue)
	b.mu.Unlock()
	if n == 0 || n >= b.max {
		return
	}
	t := b.clock.NewTimer(b.linger)
	defer t.Stop()
	select {
	case <-t.C():
	case <-b.full:
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
