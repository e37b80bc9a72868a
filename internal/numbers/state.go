package numbers

import (
	"fmt"
	"time"
)

// Number statuses and ownerships (docs/api-decisions.md, "Values and shapes the spec leaves open").
const (
	Assigned  = "assigned"
	Porting   = "porting"
	Releasing = "releasing"
	Released  = "released"

	Rented = "rented"
	Ported = "ported"
)

// Port directions and steps, as the platform reports them.
const (
	PortIn  = "in"
	PortOut = "out"

	StepStarted   = "started"
	StepCompleted = "completed"
	StepCancelled = "cancelled"
)

// State is the part of a number that porting and releasing change.
type State struct {
	Status    string
	Ownership string
	ReleaseAt *time.Time
}

// Change is a porting or release step applied to a number.
type Change struct {
	// Kind is "port" or "release".
	Kind      string
	Direction string // port: in or out
	Step      string // port: started, completed or cancelled
	// At is when a port-out or release takes effect; nil or not after now means at once.
	At *time.Time
}

// ConflictError says a change does not apply to the number in its present state (409).
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

func conflict(format string, args ...any) error {
	return &ConflictError{Message: fmt.Sprintf(format, args...)}
}

// Next decides the state a change leads to. A change whose outcome already holds leads to
// the same state, so a repeated report changes nothing. Port-in starts when the number is
// added with porting_in, so "in started" is not a step here.
func Next(cur State, c Change, now time.Time) (State, error) {
	releasedNow := func() State {
		at := now
		if cur.ReleaseAt != nil && !cur.ReleaseAt.After(now) {
			at = *cur.ReleaseAt
		}
		return State{Status: Released, Ownership: cur.Ownership, ReleaseAt: &at}
	}
	switch {
	case c.Kind == "release":
		switch cur.Status {
		case Released:
			return cur, nil
		case Assigned, Porting, Releasing:
			if c.At != nil && c.At.After(now) {
				if cur.Status == Porting {
					return cur, conflict("the number is still porting in; cancel the port instead of scheduling a release")
				}
				return State{Status: Releasing, Ownership: cur.Ownership, ReleaseAt: ptr(c.At.UTC())}, nil
			}
			if c.At != nil {
				return State{Status: Released, Ownership: cur.Ownership, ReleaseAt: ptr(c.At.UTC())}, nil
			}
			return releasedNow(), nil
		}
	case c.Kind == "port" && c.Direction == PortIn && c.Step == StepCompleted:
		switch {
		case cur.Status == Porting:
			return State{Status: Assigned, Ownership: Ported}, nil
		case cur.Status == Assigned && cur.Ownership == Ported:
			return cur, nil
		}
		return cur, conflict("the number is %s, not porting in", cur.Status)
	case c.Kind == "port" && c.Direction == PortIn && c.Step == StepCancelled:
		switch {
		case cur.Status == Porting:
			return releasedNow(), nil
		case cur.Status == Released && cur.Ownership == Ported:
			return cur, nil
		}
		return cur, conflict("the number is %s, not porting in", cur.Status)
	case c.Kind == "port" && c.Direction == PortOut && c.Step == StepStarted:
		switch cur.Status {
		case Assigned, Releasing:
			if c.At == nil || !c.At.After(now) {
				return cur, conflict("a port out needs a release_at in the future")
			}
			return State{Status: Releasing, Ownership: cur.Ownership, ReleaseAt: ptr(c.At.UTC())}, nil
		}
		return cur, conflict("the number is %s; only an assigned number can port out", cur.Status)
	case c.Kind == "port" && c.Direction == PortOut && c.Step == StepCompleted:
		switch cur.Status {
		case Assigned, Releasing:
			return releasedNow(), nil
		case Released:
			return cur, nil
		}
		return cur, conflict("the number is %s; only an assigned number can port out", cur.Status)
	case c.Kind == "port" && c.Direction == PortOut && c.Step == StepCancelled:
		switch cur.Status {
		case Releasing:
			return State{Status: Assigned, Ownership: cur.Ownership}, nil
		case Assigned:
			return cur, nil
		}
		return cur, conflict("the number is %s, not porting out", cur.Status)
	}
	return cur, conflict("unknown change %s %s %s", c.Kind, c.Direction, c.Step)
}

func ptr[T any](v T) *T { return &v }
