package delivery

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Slots bounds the attempts in flight to each endpoint. A delivery that finds its endpoint's
// slots taken is parked; each released slot wakes the first parked delivery (in the order
// they parked) through Wake, so a busy or hanging endpoint's backlog waits without spinning
// through the workers.
type Slots struct {
	perEndpoint int
	// wake is called, under no lock of the caller's, for the delivery a release picked; it
	// returns false when the wake could not be sent (the delivery then comes back by itself
	// after its requeue).
	wake func(delivery types.NamespacedName) bool

	mu     sync.Mutex
	slots  map[types.NamespacedName]chan struct{}
	parked map[types.NamespacedName]*parkQueue
	// freed is closed (and replaced) when one of the endpoint's slots is released, for
	// the waiters of AcquireWait.
	freed map[types.NamespacedName]chan struct{}
}

// parkQueue is an endpoint's parked deliveries in order; a delivery that got a slot some
// other way (its own event) leaves the set, and its stale place in order is skipped.
type parkQueue struct {
	order []types.NamespacedName
	in    map[types.NamespacedName]bool
}

// NewSlots gives each endpoint perEndpoint slots; wake is called for a parked delivery when
// a slot is released (it must not block).
func NewSlots(perEndpoint int, wake func(delivery types.NamespacedName) bool) *Slots {
	return &Slots{perEndpoint: perEndpoint, wake: wake, slots: map[types.NamespacedName]chan struct{}{},
		parked: map[types.NamespacedName]*parkQueue{}, freed: map[types.NamespacedName]chan struct{}{}}
}

// AcquireWait takes one of the endpoint's slots, waiting for one to be released (it does
// not park); err is ctx's when it ends first.
func (s *Slots) AcquireWait(ctx context.Context, endpoint types.NamespacedName) (release func(), err error) {
	for {
		s.mu.Lock()
		slot := s.slots[endpoint]
		if slot == nil {
			slot = make(chan struct{}, s.perEndpoint)
			s.slots[endpoint] = slot
		}
		select {
		case slot <- struct{}{}:
			s.mu.Unlock()
			return sync.OnceFunc(func() { s.release(endpoint, slot) }), nil
		default:
		}
		freed := s.freed[endpoint]
		if freed == nil {
			freed = make(chan struct{})
			s.freed[endpoint] = freed
		}
		s.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Acquire takes one of the endpoint's slots without waiting. When none is free, the delivery
// is parked and ok is false. release is safe to call more than once.
func (s *Slots) Acquire(endpoint, delivery types.NamespacedName) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := s.slots[endpoint]
	if slot == nil {
		slot = make(chan struct{}, s.perEndpoint)
		s.slots[endpoint] = slot
	}
	q := s.parked[endpoint]
	select {
	case slot <- struct{}{}:
		if q != nil {
			delete(q.in, delivery)
		}
		return sync.OnceFunc(func() { s.release(endpoint, slot) }), true
	default:
		if q == nil {
			q = &parkQueue{in: map[types.NamespacedName]bool{}}
			s.parked[endpoint] = q
		}
		if !q.in[delivery] {
			q.in[delivery] = true
			q.order = append(q.order, delivery)
		}
		return nil, false
	}
}

func (s *Slots) release(endpoint types.NamespacedName, slot chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	<-slot
	if freed := s.freed[endpoint]; freed != nil {
		close(freed)
		delete(s.freed, endpoint)
	}
	q := s.parked[endpoint]
	if q == nil {
		return
	}
	for len(q.order) > 0 {
		next := q.order[0]
		q.order = q.order[1:]
		if !q.in[next] {
			continue // it got a slot meanwhile, or was deleted
		}
		delete(q.in, next)
		s.wake(next)
		break
	}
	if len(q.in) == 0 {
		delete(s.parked, endpoint)
	}
}

// Forget drops the parked place of a deleted delivery.
func (s *Slots) Forget(endpoint, delivery types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.parked[endpoint]; q != nil {
		delete(q.in, delivery)
		if len(q.in) == 0 {
			delete(s.parked, endpoint)
		}
	}
}
