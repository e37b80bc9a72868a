package store_test

import (
	"context"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// A statement given up on by its caller (the client went away) keeps the pool: it is neither
// a lost connection nor the database being unavailable.
func TestCancelledStatementKeepsThePool(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	conn, err := st.SQL().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	conn.Release()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	conn, err = st.SQL().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(cancelled, "SELECT 1")
	conn.Release()
	if err == nil || store.IsUnavailable(err) {
		t.Fatalf("cancelled statement: %v, IsUnavailable %v; want an error that is not unavailability", err, store.IsUnavailable(err))
	}
	conn, err = st.SQL().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if got := conn.Conn().PgConn().PID(); got != pid {
		t.Errorf("the pool's connection was replaced (backend %d, then %d) after a cancelled statement", pid, got)
	}
}
