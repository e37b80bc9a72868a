package engine

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Removed remembers the deliveries the controller deleted recently, so that a reconcile of
// a stale cached copy does not repeat the delete. It keeps two generations of up to kept
// each: the cache catches up long before a generation is dropped.
type Removed struct {
	kept int

	mu            sync.Mutex
	now, previous map[types.UID]struct{}
}

// DefaultRemovedKept bounds each generation of Removed.
const DefaultRemovedKept = 10000

// NewRemoved keeps up to 2×kept uids.
func NewRemoved(kept int) *Removed {
	return &Removed{kept: kept, now: map[types.UID]struct{}{}}
}

// Add notes a deleted delivery.
func (r *Removed) Add(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.now) >= r.kept {
		r.previous, r.now = r.now, map[types.UID]struct{}{}
	}
	r.now[uid] = struct{}{}
}

// Has reports whether uid was deleted recently.
func (r *Removed) Has(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.now[uid]
	if !ok {
		_, ok = r.previous[uid]
	}
	return ok
}
