package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestScheduleSameSeedSameSchedule(t *testing.T) {
	o := DefaultOptions(5 * time.Minute)
	a := Schedule(42, 5*time.Minute, o)
	b := Schedule(42, 5*time.Minute, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 gave two schedules:\n%v\n%v", a, b)
	}
	if c := Schedule(43, 5*time.Minute, o); reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 gave the same schedule: %v", a)
	}
}

func TestScheduleBounds(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		o    Options
		// allKinds: the run is long enough for every kind to occur.
		allKinds bool
	}{
		{name: "short run", d: 4 * time.Minute, o: DefaultOptions(4 * time.Minute), allKinds: true},
		{name: "default short run", d: 5 * time.Minute, o: DefaultOptions(5 * time.Minute), allKinds: true},
		{name: "bench run", d: 30 * time.Minute, o: DefaultOptions(30 * time.Minute), allKinds: true},
		{name: "one replica, one account", d: 10 * time.Minute, o: func() Options {
			o := DefaultOptions(10 * time.Minute)
			o.Replicas, o.Accounts = 1, 1
			return o
		}(), allKinds: true},
		{name: "too short for any outage", d: 20 * time.Second, o: DefaultOptions(30 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(0); seed < 200; seed++ {
				s := Schedule(seed, tc.d, tc.o)
				last := map[Kind]Fault{}
				seen := map[Kind]bool{}
				for i, f := range s {
					if i > 0 && (s[i-1].At > f.At || s[i-1].At == f.At && s[i-1].Kind > f.Kind) {
						t.Fatalf("seed %d: out of order at %d: %v then %v", seed, i, s[i-1], f)
					}
					if f.At < 0 || f.End() > tc.d {
						t.Fatalf("seed %d: %v outside [0, %v]", seed, f, tc.d)
					}
					l := tc.o.Length[f.Kind]
					if f.Duration < l.Min || f.Duration > l.Max {
						t.Fatalf("seed %d: %v lasts outside [%v, %v]", seed, f, l.Min, l.Max)
					}
					n := map[Kind]int{KillReplica: tc.o.Replicas, TermReplica: tc.o.Replicas, ReceiverOutage: tc.o.Accounts}[f.Kind]
					if f.Target < 0 || (n > 0 && f.Target >= n) || (n == 0 && f.Target != 0) {
						t.Fatalf("seed %d: %v targets out of range (%d)", seed, f, n)
					}
					if p, ok := last[f.Kind]; ok && f.At < p.End()+tc.o.Gap.Min {
						t.Fatalf("seed %d: %v starts within %v of the previous %v", seed, f, tc.o.Gap.Min, p)
					}
					last[f.Kind] = f
					seen[f.Kind] = true
				}
				if tc.allKinds {
					for _, k := range Kinds {
						if !seen[k] {
							t.Fatalf("seed %d: no %v in %v: %v", seed, k, tc.d, s)
						}
					}
				}
				if tc.o.Length[ReceiverOutage].Min > tc.d && seen[ReceiverOutage] {
					t.Fatalf("seed %d: an outage longer than the run was scheduled", seed)
				}
			}
		})
	}
}

func TestDefaultOptionsFreezeAndOutage(t *testing.T) {
	tests := []struct {
		d                 time.Duration
		outageMin, outMax time.Duration
	}{
		{d: 5 * time.Minute, outageMin: 15 * time.Second, outMax: 30 * time.Second},
		{d: 30 * time.Minute, outageMin: 3 * time.Minute, outMax: 5 * time.Minute},
	}
	for _, tc := range tests {
		o := DefaultOptions(tc.d)
		if f := o.Length[APIServerFreeze]; f.Min != 5*time.Second || f.Max != 30*time.Second {
			t.Errorf("%v: freeze %v, want 5s–30s", tc.d, f)
		}
		if g := o.Length[ReceiverOutage]; g.Min != tc.outageMin || g.Max != tc.outMax {
			t.Errorf("%v: outage %v, want %v–%v", tc.d, g, tc.outageMin, tc.outMax)
		}
	}
}
