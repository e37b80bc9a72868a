package numbers

import (
	"errors"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	now := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	later, earlier := now.Add(72*time.Hour), now.Add(-time.Hour)
	at := func(t time.Time) *time.Time { return &t }
	assigned := State{Status: Assigned, Ownership: Rented}
	portingIn := State{Status: Porting, Ownership: Ported}
	releasing := State{Status: Releasing, Ownership: Rented, ReleaseAt: at(later)}
	released := State{Status: Released, Ownership: Rented, ReleaseAt: at(earlier)}
	release := func(when *time.Time) Change { return Change{Kind: "release", At: when} }
	port := func(dir, step string, when *time.Time) Change {
		return Change{Kind: "port", Direction: dir, Step: step, At: when}
	}
	cases := []struct {
		name     string
		cur      State
		change   Change
		want     State
		conflict bool
	}{
		{"release now", assigned, release(nil), State{Released, Rented, at(now)}, false},
		{"release at a past time keeps that time", assigned, release(at(earlier)), State{Released, Rented, at(earlier)}, false},
		{"release later schedules it", assigned, release(at(later)), State{Releasing, Rented, at(later)}, false},
		{"release again is unchanged", released, release(nil), released, false},
		{"release a scheduled number now", releasing, release(nil), State{Released, Rented, at(now)}, false},
		{"reschedule a release", releasing, release(at(later.Add(time.Hour))), State{Releasing, Rented, at(later.Add(time.Hour))}, false},
		{"scheduled release repeated is unchanged", releasing, release(at(later)), releasing, false},
		{"release a number porting in now", portingIn, release(nil), State{Released, Ported, at(now)}, false},
		{"a number porting in cannot be scheduled for release", portingIn, release(at(later)), portingIn, true},

		{"port in completes", portingIn, port(PortIn, StepCompleted, nil), State{Assigned, Ported, nil}, false},
		{"port in completed again is unchanged", State{Assigned, Ported, nil}, port(PortIn, StepCompleted, nil), State{Assigned, Ported, nil}, false},
		{"a rented number does not complete a port in", assigned, port(PortIn, StepCompleted, nil), assigned, true},
		{"port in cancelled releases it", portingIn, port(PortIn, StepCancelled, nil), State{Released, Ported, at(now)}, false},
		{"port in cancelled again is unchanged", State{Released, Ported, at(earlier)}, port(PortIn, StepCancelled, nil), State{Released, Ported, at(earlier)}, false},
		{"an assigned number cannot cancel a port in", assigned, port(PortIn, StepCancelled, nil), assigned, true},

		{"port out starts", assigned, port(PortOut, StepStarted, at(later)), releasing, false},
		{"port out started again is unchanged", releasing, port(PortOut, StepStarted, at(later)), releasing, false},
		{"port out needs a future date", assigned, port(PortOut, StepStarted, at(earlier)), assigned, true},
		{"a number porting in cannot port out", portingIn, port(PortOut, StepStarted, at(later)), portingIn, true},
		{"port out completes", releasing, port(PortOut, StepCompleted, nil), State{Released, Rented, at(now)}, false},
		{"port out completes without notice", assigned, port(PortOut, StepCompleted, nil), State{Released, Rented, at(now)}, false},
		{"port out completed again is unchanged", released, port(PortOut, StepCompleted, nil), released, false},
		{"port out cancelled", releasing, port(PortOut, StepCancelled, nil), assigned, false},
		{"port out cancelled again is unchanged", assigned, port(PortOut, StepCancelled, nil), assigned, false},
		{"too late to cancel a port out", released, port(PortOut, StepCancelled, nil), released, true},
		{"unknown step", assigned, port(PortIn, StepStarted, nil), assigned, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Next(c.cur, c.change, now)
			var ce *ConflictError
			if c.conflict != errors.As(err, &ce) || (!c.conflict && err != nil) {
				t.Fatalf("error %v, want conflict %t", err, c.conflict)
			}
			if !sameState(got, c.want) {
				t.Errorf("got %+v (release_at %v), want %+v (release_at %v)", got, got.ReleaseAt, c.want, c.want.ReleaseAt)
			}
		})
	}
}
