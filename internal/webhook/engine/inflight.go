package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// InFlight holds the cancel functions of the attempts in flight, by endpoint, so that
// removing an endpoint stops its attempts at once.
type InFlight struct {
	mu       sync.Mutex
	attempts map[types.NamespacedName]map[string]context.CancelFunc
}

// NewInFlight makes an empty InFlight.
func NewInFlight() *InFlight {
	return &InFlight{attempts: map[types.NamespacedName]map[string]context.CancelFunc{}}
}

// Track registers the attempt of delivery to endpoint; untrack when it is over.
func (f *InFlight) Track(endpoint types.NamespacedName, delivery string, cancel context.CancelFunc) (untrack func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.attempts[endpoint]
	if m == nil {
		m = map[string]context.CancelFunc{}
		f.attempts[endpoint] = m
	}
	m[delivery] = cancel
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.attempts[endpoint], delivery)
		if len(f.attempts[endpoint]) == 0 {
			delete(f.attempts, endpoint)
		}
	}
}

// Cancel cancels every attempt in flight to endpoint.
func (f *InFlight) Cancel(endpoint types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.attempts[endpoint] {
		cancel()
	}
}

// Len is how many attempts to endpoint are in flight.
func (f *InFlight) Len(endpoint types.NamespacedName) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.attempts[endpoint])
}
