package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Slots bounds the attempts in flight to each endpoint. A delivery that finds its endpoint's
// slots taken is parked; each released slot wakes the first parked delivery (in the order
// they parked) through Wake, so a busy or hanging endpoint's backlog waits without spinning
// through the workers.
type Slots struct {
	perEndpoint int
	// share, when set, is how many of an endpoint's perEndpoint slots this process may use
	// now (its part of a bound held across replicas, internal/webhook/fleet); unset: all of them.
	share func(endpoint types.NamespacedName) int
	// wake is called, under no lock of the caller's, for the delivery a release picked; it
	// returns false when the wake could not be sent (the delivery then comes back by itself
	// after its requeue).
	wake func(delivery types.NamespacedName) bool

	mu     sync.Mutex
	slots  map[types.NamespacedName]chan struct{}
	parked map[types.NamespacedName]*parkQueue
	// waiters are the endpoint's AcquireWait callers in the order they came. A release wakes
	// the first one only: waking them all had hundreds race for each slot and any of them win,
	// so an event's deliveries to several endpoints finished far apart and its claim, which
	// bounds what the account may hold, ended late (a fan-out drained at a third of the pace).
	// A waiter woken for a slot someone else took goes back to its place by arrival, also when
	// Grown woke them all.
	waiters map[types.NamespacedName][]slotWaiter
	arrived uint64
}

// slotWaiter is one AcquireWait caller: its wake, and its place by arrival.
type slotWaiter struct {
	wake    chan struct{}
	arrival uint64
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
		parked: map[types.NamespacedName]*parkQueue{}, waiters: map[types.NamespacedName][]slotWaiter{}}
}

// SetShare makes the bound of each endpoint this process's share of it (see the share
// field); call Grown when shares may have grown, so that waiters try again.
func (s *Slots) SetShare(share func(endpoint types.NamespacedName) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.share = share
}

// SetWake replaces the wake function (a controller started again hands in its own).
func (s *Slots) SetWake(wake func(delivery types.NamespacedName) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake = wake
}

// Grown wakes every waiter and one parked delivery of each endpoint: shares may have
// grown (a replica left the fleet), so slots may be free that no release announces.
func (s *Slots) Grown() {
	s.mu.Lock()
	var wake []types.NamespacedName
	for ep, waiting := range s.waiters {
		for _, w := range waiting {
			close(w.wake)
		}
		delete(s.waiters, ep)
	}
	for ep, q := range s.parked {
		for len(q.order) > 0 {
			next := q.order[0]
			q.order = q.order[1:]
			if q.in[next] {
				delete(q.in, next)
				wake = append(wake, next)
				break
			}
		}
		if len(q.in) == 0 {
			delete(s.parked, ep)
		}
	}
	w := s.wake
	s.mu.Unlock()
	for _, d := range wake {
		w(d)
	}
}

// takeLocked takes one of endpoint's slots if its bound leaves one free.
func (s *Slots) takeLocked(endpoint types.NamespacedName, slot chan struct{}) bool {
	if s.share != nil && len(slot) >= s.share(endpoint) {
		return false
	}
	select {
	case slot <- struct{}{}:
		return true
	default:
		return false
	}
}

// AcquireWait takes one of the endpoint's slots, waiting for one to be released (it does
// not park); err is ctx's when it ends first. Waiters are served in the order they came.
func (s *Slots) AcquireWait(ctx context.Context, endpoint types.NamespacedName) (release func(), err error) {
	var arrival uint64
	for {
		s.mu.Lock()
		slot := s.slots[endpoint]
		if slot == nil {
			slot = make(chan struct{}, s.perEndpoint)
			s.slots[endpoint] = slot
		}
		if s.takeLocked(endpoint, slot) {
			s.mu.Unlock()
			return sync.OnceFunc(func() { s.release(endpoint, slot) }), nil
		}
		if arrival == 0 {
			s.arrived++
			arrival = s.arrived
		}
		w := make(chan struct{})
		waiting := s.waiters[endpoint]
		// A new waiter goes last; one woken for a slot that someone else took first goes back
		// to its place.
		at, _ := slices.BinarySearchFunc(waiting, arrival, func(w slotWaiter, a uint64) int { return cmp.Compare(w.arrival, a) })
		s.waiters[endpoint] = slices.Insert(waiting, at, slotWaiter{wake: w, arrival: arrival})
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			s.mu.Lock()
			if !s.dropWaiterLocked(endpoint, w) {
				s.wakeWaiterLocked(endpoint) // it was woken: the wake goes to the next one
			}
			s.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// wakeWaiterLocked wakes the endpoint's first AcquireWait waiter, if any.
func (s *Slots) wakeWaiterLocked(endpoint types.NamespacedName) {
	waiting := s.waiters[endpoint]
	if len(waiting) == 0 {
		return
	}
	close(waiting[0].wake)
	if len(waiting) == 1 {
		delete(s.waiters, endpoint)
	} else {
		s.waiters[endpoint] = waiting[1:]
	}
}

// dropWaiterLocked removes w from the endpoint's waiters; false when it is not there (it was
// woken).
func (s *Slots) dropWaiterLocked(endpoint types.NamespacedName, w chan struct{}) bool {
	waiting := s.waiters[endpoint]
	i := slices.IndexFunc(waiting, func(x slotWaiter) bool { return x.wake == w })
	if i < 0 {
		return false
	}
	if waiting = slices.Delete(waiting, i, i+1); len(waiting) == 0 {
		delete(s.waiters, endpoint)
	} else {
		s.waiters[endpoint] = waiting
	}
	return true
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
	if s.takeLocked(endpoint, slot) {
		if q != nil {
			delete(q.in, delivery)
		}
		return sync.OnceFunc(func() { s.release(endpoint, slot) }), true
	}
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

func (s *Slots) release(endpoint types.NamespacedName, slot chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	<-slot
	s.wakeWaiterLocked(endpoint)
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
