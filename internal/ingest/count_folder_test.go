package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Calls reported through the ingestion API leave their counts pending; the folder moves them
// into the count tables on its ticks, in batches, and the
// calls list's total is the same before and after.
func TestCountFolderFoldsReportedCalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i := range 5 {
		if status, body := f.post(t, token, "/platform/v1/calls", call(fmt.Sprintf("fold-%d", i), "answered", nil)); status != 200 && status != 201 {
			t.Fatalf("report %d: %d %v", i, status, body)
		}
	}
	pending := func() int64 {
		t.Helper()
		n, err := f.st.PendingCallCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := pending(); got != 5 {
		t.Fatalf("%d call-count deltas pending after 5 reports, want 5", got)
	}
	total := func() int {
		t.Helper()
		_, n, err := f.st.ListCalls(ctx, f.account.ID, store.CallFilter{Activity: "all", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := total(); got != 5 {
		t.Fatalf("calls list total %d with the counts pending, want 5", got)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	folder := &ingest.CountFolder{Store: f.st, Clock: f.clock, Log: logr.Discard(), Batch: 2}
	go func() { done <- folder.Start(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d deltas still pending", pending())
		}
		f.clock.Step(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if got := total(); got != 5 {
		t.Fatalf("calls list total %d once folded, want 5", got)
	}
}
