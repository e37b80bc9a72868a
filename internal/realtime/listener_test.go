package realtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// After every loss of PostgreSQL the listener is back a second later, not after a pause grown
// by the losses before: each connection that listened starts the back-off again.
func TestTheListenerReconnectsASecondAfterEachLoss(t *testing.T) {
	f := newFixture(t)
	clk := clocktesting.NewFakeClock(time.Now())
	r := newReplica(t, f.dbURL, f.st, options{clock: clk})
	c := r.connect(t, f.a.OwnerKey)
	channel := r.subscribe(t, c, f.a.OwnerKey, f.a)
	db := storetest.SQL(t, f.st)
	ctx := context.Background()

	// listener is the pid of the backend LISTENing on the channel (0: none), other than not.
	listener := func(not int32) int32 {
		var pid int32
		err := db.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
			AND query LIKE 'LISTEN '||$1||'%' AND pid <> $2`, store.RealtimeChannel, not).Scan(&pid)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return pid
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return ok(), nil }); err != nil {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
	pid := listener(0)
	for loss := 1; loss <= 3; loss++ {
		if _, err := db.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		eventually("the listener's backend to end", func() bool { return listener(0) == 0 })
		// The hub notices the loss and waits on the clock; then a second passes.
		time.Sleep(300 * time.Millisecond)
		clk.Step(time.Second)
		old := pid
		eventually(fmt.Sprintf("the listener to reconnect a second after loss %d", loss), func() bool {
			pid = listener(old)
			return pid != 0
		})
	}
	if _, err := f.st.CreateTask(ctx, store.NewTask{AccountID: f.a.Account.ID, Text: "after three losses"}); err != nil {
		t.Fatal(err)
	}
	c.expectEvent("todo.created", channel)
}
