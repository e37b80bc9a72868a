package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// ListenOutbox hears a commit that queues events (once per commit, not per event), not a
// transaction that is still open or rolled back, and returns nil when its context ends.
func TestListenOutboxHearsCommitsThatQueueEvents(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Outbox Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan struct{}, 100)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.ListenOutbox(lctx, func() { heard <- struct{}{} }) }()
	expect := func(step string, want int) {
		t.Helper()
		wait := time.After(300 * time.Millisecond)
		if want > 0 {
			wait = time.After(10 * time.Second)
		}
		got := 0
		for got < want || want == 0 {
			select {
			case <-heard:
				got++
				continue
			case <-wait:
			}
			break
		}
		if got != want {
			t.Fatalf("%s: heard %d, want %d", step, got, want)
		}
	}
	expect("listening", 1)

	at := time.Date(2026, 11, 20, 9, 5, 0, 0, time.UTC)
	queue := func(tx *store.Tx) error {
		_, err := tx.EnqueueEvents(ctx, []events.Event{
			{ID: uuid.New(), AccountID: acct.ID, Type: events.CallEnded, Body: []byte(`{}`), CreatedAt: at},
			{ID: uuid.New(), AccountID: acct.ID, Type: events.VoicemailReceived, Body: []byte(`{}`), CreatedAt: at}})
		return err
	}
	errRollback := errors.New("roll back")
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if err := queue(tx); err != nil {
			return err
		}
		expect("before the commit", 0)
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	expect("rolled back", 0)
	if err := st.InTx(ctx, queue); err != nil {
		t.Fatal(err)
	}
	expect("committed", 1)
	expect("one notification per commit", 0)

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ListenOutbox returned %v after its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenOutbox did not return after its context ended")
	}
}
