package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// lostListener is a Store whose outbox listener loses its connection at once, after listening
// when listens is set; it records when each connection was opened.
type lostListener struct {
	Store   // nil: only ListenOutbox is called
	listens bool
	opened  chan time.Time
}

func (l *lostListener) ListenOutbox(_ context.Context, queued func()) error {
	l.opened <- time.Now()
	if l.listens {
		queued()
	}
	return errors.New("connection lost")
}

// The outbox listener's pause before reconnecting grows while reconnecting fails, and starts
// again at a second after a connection that listened.
func TestOutboxListenerBackOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listens bool
		minGap  time.Duration // least pause before the third connection
		maxGap  time.Duration // most
	}{
		{name: "each connection listened: a second each time", listens: true, minGap: 900 * time.Millisecond, maxGap: 1500 * time.Millisecond},
		{name: "no connection listened: the pause doubles", listens: false, minGap: 1900 * time.Millisecond, maxGap: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &lostListener{listens: tc.listens, opened: make(chan time.Time, 8)}
			w := &Dispatcher{Store: l, Log: logr.Discard()}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); w.listen(ctx, make(chan struct{}, 1)) }()
			defer func() { cancel(); <-done }()
			var at [3]time.Time
			for i := range at {
				select {
				case at[i] = <-l.opened:
				case <-time.After(5 * time.Second):
					t.Fatalf("connection %d was not opened within 5 s", i+1)
				}
			}
			if gap := at[2].Sub(at[1]); gap < tc.minGap || gap > tc.maxGap {
				t.Fatalf("paused %v before the third connection, want %v to %v", gap, tc.minGap, tc.maxGap)
			}
		})
	}
}
