package engine

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// heldClaims are the outbox events a dispatcher has claimed and not yet marked dispatched or
// released, with when each claim was last made or renewed.
type heldClaims struct {
	mu   sync.Mutex
	held map[uuid.UUID]time.Time
}

func (h *heldClaims) hold(ids []uuid.UUID, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[uuid.UUID]time.Time{}
	}
	for _, id := range ids {
		h.held[id] = at
	}
}

func (h *heldClaims) letGo(ids ...uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.held, id)
	}
}

// due returns the claims last made or renewed at or before since, and notes them renewed at
// now: a claim younger than a renewal interval needs none yet.
func (h *heldClaims) due(since, now time.Time) []uuid.UUID {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []uuid.UUID
	for id, at := range h.held {
		if !at.After(since) {
			ids = append(ids, id)
			h.held[id] = now
		}
	}
	return ids
}

// renewClaims extends the claims the dispatcher holds, every third of the lease, until ctx
// ends: an event waiting long for its endpoint's slots stays this replica's, while the events
// of a replica that died are taken by the others one lease after its last renewal. A failed
// renewal is tried again at the next tick, before the lease ends.
func (w *Dispatcher) renewClaims(ctx context.Context) {
	interval := w.Lease / 3
	// Real time paces the renewals, as the poll; the claims' times come from Clock.
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		now := w.Clock.Now()
		ids := w.claims.due(now.Add(-interval), now)
		if len(ids) == 0 {
			continue
		}
		renewCtx, cancel := context.WithTimeout(ctx, interval)
		err := w.Store.RenewEventClaims(renewCtx, ids, now.Add(w.Lease))
		cancel()
		if err != nil && ctx.Err() == nil {
			w.Log.Error(err, "renew the claims on webhook events", "events", len(ids))
		}
	}
}
