/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// recordingBatches is a batch function that keeps the size of each batch it ran.
type recordingBatches struct {
	mu    sync.Mutex
	sizes []int
}

func (r *recordingBatches) fn(_ context.Context, in []int) ([]int, []error) {
	r.mu.Lock()
	r.sizes = append(r.sizes, len(in))
	r.mu.Unlock()
	return in, nil
}

func (r *recordingBatches) ran() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.sizes...)
}

// callAll makes n calls of b at once and returns once each has its answer.
func callAll(t *testing.T, b *batcher[int, int], n int) chan struct{} {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := b.do(context.Background(), i); err != nil || out != i {
				t.Errorf("call %d: got %d, %v", i, out, err)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

func TestLingeringBatchWaitsForCallsThenRunsThemTogether(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recordingBatches{}
	b := newBatcher(10, 1, rec.fn).lingering(20*time.Millisecond, clk)

	done := callAll(t, b, 3)
	waitFor(t, "the batch to linger", clk.HasWaiters)
	// The three calls are queued before the linger ends; none has run.
	waitFor(t, "three calls queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 3 })
	if got := rec.ran(); len(got) != 0 {
		t.Fatalf("batches ran before the linger ended: %v", got)
	}
	clk.Step(20 * time.Millisecond)
	<-done
	if got := rec.ran(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("batches: got %v, want one of 3", got)
	}
}

func TestLingeringBatchRunsAtOnceWhenFull(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recordingBatches{}
	b := newBatcher(4, 1, rec.fn).lingering(time.Hour, clk)

	// Four calls fill the batch: it runs without the clock moving.
	select {
	case <-callAll(t, b, 4):
	case <-time.After(10 * time.Second):
		t.Fatalf("a full batch waited for its linger; batches run: %v", rec.ran())
	}
	if got := rec.ran(); len(got) != 1 || got[0] != 4 {
		t.Fatalf("batches: got %v, want one of 4", got)
	}
}

func TestBatcherWithoutLingerRunsALoneCallAtOnce(t *testing.T) {
	rec := &recordingBatches{}
	b := newBatcher(10, 1, rec.fn)
	select {
	case <-callAll(t, b, 1):
	case <-time.After(10 * time.Second):
		t.Fatal("a lone call waited")
	}
	if got := rec.ran(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("batches: %v", got)
	}
}

// waitFor polls cond every millisecond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// A queue that filled while its batcher was busy (not lingering) leaves no signal behind to
// cut the next linger short.
func TestLingerIsNotCutShortByAnEarlierFullQueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rec := &recordingBatches{}
	release := make(chan struct{})
	blocking := func(ctx context.Context, in []int) ([]int, []error) {
		if len(in) == 1 && in[0] == -1 {
			<-release
		}
		return rec.fn(ctx, in)
	}
	b := newBatcher(4, 1, blocking).lingering(20*time.Millisecond, clk)

	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = b.do(context.Background(), -1)
	}()
	waitFor(t, "the first batch to linger", clk.HasWaiters)
	clk.Step(20 * time.Millisecond)
	// The first batch is running (held); four calls fill the queue meanwhile.
	waitFor(t, "the first batch to run", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 0 })
	filled := callAll(t, b, 4)
	waitFor(t, "four calls queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 4 })
	close(release)
	<-first
	<-filled
	// A lone call now lingers its full time.
	lone := callAll(t, b, 1)
	waitFor(t, "the lone call to linger", clk.HasWaiters)
	time.Sleep(50 * time.Millisecond)
	if got := rec.ran(); len(got) != 2 {
		t.Fatalf("batches before the linger ended: %v, want [1 4]", got)
	}
	clk.Step(20 * time.Millisecond)
	<-lone
	if got := rec.ran(); len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 1 {
		t.Fatalf("batches: %v, want [1 4 1]", got)
	}
}
