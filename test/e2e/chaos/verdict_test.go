package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestAttributeRepeats(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w := Window{Before: 15 * time.Second, After: 2 * time.Second}
	tests := []struct {
		name            string
		receipts        []Receipt
		causes          []Cause
		wantByKill      []int
		wantUnexplained []string // event ids
	}{
		{name: "no repeats", receipts: []Receipt{{EventID: "a", At: at(1)}, {EventID: "b", At: at(2)}},
			causes: []Cause{{From: at(3), To: at(3)}}, wantByKill: []int{0}},
		{name: "first delivery inside the window before a kill",
			receipts: []Receipt{{EventID: "a", At: at(90)}, {EventID: "a", At: at(110)}},
			causes:   []Cause{{From: at(100), To: at(100)}}, wantByKill: []int{1}},
		{name: "window edges are inside",
			receipts: []Receipt{{EventID: "a", At: at(85)}, {EventID: "b", At: at(102)}, {EventID: "a", At: at(120)}, {EventID: "b", At: at(121)}},
			causes:   []Cause{{From: at(100), To: at(100)}}, wantByKill: []int{2}},
		{name: "first delivery too early for the kill",
			receipts: []Receipt{{EventID: "a", At: at(84)}, {EventID: "a", At: at(110)}},
			causes:   []Cause{{From: at(100), To: at(100)}}, wantByKill: []int{0}, wantUnexplained: []string{"a"}},
		{name: "first delivery too late for the kill",
			receipts: []Receipt{{EventID: "a", At: at(103)}, {EventID: "a", At: at(110)}},
			causes:   []Cause{{From: at(100), To: at(100)}}, wantByKill: []int{0}, wantUnexplained: []string{"a"}},
		{name: "no kill at all", receipts: []Receipt{{EventID: "a", At: at(1)}, {EventID: "a", At: at(2)}},
			wantByKill: []int{}, wantUnexplained: []string{"a"}},
		{name: "receipts out of order: the earliest is the first",
			receipts: []Receipt{{EventID: "a", At: at(200)}, {EventID: "a", At: at(95)}},
			causes:   []Cause{{From: at(100), To: at(100)}}, wantByKill: []int{1}},
		{name: "inside an outage, not near its start",
			receipts: []Receipt{{EventID: "a", At: at(140)}, {EventID: "a", At: at(200)}},
			causes:   []Cause{{From: at(100), To: at(150)}}, wantByKill: []int{1}},
		{name: "just after an outage",
			receipts: []Receipt{{EventID: "a", At: at(153)}, {EventID: "a", At: at(200)}},
			causes:   []Cause{{From: at(100), To: at(150)}}, wantByKill: []int{0}, wantUnexplained: []string{"a"}},
		{name: "two overlapping windows: the earlier kill",
			receipts: []Receipt{{EventID: "a", At: at(95)}, {EventID: "a", At: at(130)}, {EventID: "a", At: at(140)}},
			causes:   []Cause{{From: at(105), To: at(105)}, {From: at(100), To: at(100)}}, wantByKill: []int{0, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			byKill, unexplained := AttributeRepeats(tc.receipts, tc.causes, w)
			if !reflect.DeepEqual(byKill, tc.wantByKill) {
				t.Errorf("byKill = %v, want %v", byKill, tc.wantByKill)
			}
			var ids []string
			for _, r := range unexplained {
				ids = append(ids, r.EventID)
			}
			if !reflect.DeepEqual(ids, tc.wantUnexplained) {
				t.Errorf("unexplained = %v, want %v", ids, tc.wantUnexplained)
			}
		})
	}
}

func TestFirstAfter(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name   string
		times  []time.Time
		from   time.Time
		want   time.Duration
		wantOK bool
	}{
		{name: "none", from: at(0)},
		{name: "all before", times: []time.Time{at(-5), at(-1)}, from: at(0)},
		{name: "unsorted, earliest after wins", times: []time.Time{at(900), at(-3), at(250), at(400)}, from: at(0),
			want: 250 * time.Millisecond, wantOK: true},
		{name: "at from counts", times: []time.Time{at(10), at(0)}, from: at(0), want: 0, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := FirstAfter(tc.times, tc.from)
			if d != tc.want || ok != tc.wantOK {
				t.Fatalf("FirstAfter = %v, %v; want %v, %v", d, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		in            []time.Duration
		median, worst time.Duration
	}{
		{},
		{in: []time.Duration{3}, median: 3, worst: 3},
		{in: []time.Duration{9, 1, 5}, median: 5, worst: 9},
		{in: []time.Duration{4, 2, 8, 6}, median: 6, worst: 8},
	}
	for _, tc := range tests {
		if m, w := Spread(tc.in); m != tc.median || w != tc.worst {
			t.Errorf("Spread(%v) = %v, %v; want %v, %v", tc.in, m, w, tc.median, tc.worst)
		}
	}
}

func TestMemoryBound(t *testing.T) {
	tests := []struct{ warm, want int64 }{
		{warm: 0, want: 32 << 20},
		{warm: 100 << 20, want: 182 << 20},
	}
	for _, tc := range tests {
		if got := MemoryBound(tc.warm); got != tc.want {
			t.Errorf("MemoryBound(%d) = %d, want %d", tc.warm, got, tc.want)
		}
	}
}
