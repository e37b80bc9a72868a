package portal

import (
	"fmt"
	"slices"
	"testing"
)

func TestLowBalance(t *testing.T) {
	for _, tc := range []struct {
		balance int64
		rate    int
		want    bool
	}{
		{balance: 499, rate: 0, want: true},
		{balance: 500, rate: 0, want: false},
		{balance: -10, rate: 0, want: true},
		// 30 minutes at 20p a minute is £6: the rate raises the floor.
		{balance: 599, rate: 20, want: true},
		{balance: 600, rate: 20, want: false},
		// A cheap rate does not lower it below £5.
		{balance: 450, rate: 1, want: true},
	} {
		if got := lowBalance(tc.balance, tc.rate); got != tc.want {
			t.Errorf("lowBalance(%d, %d) = %v, want %v", tc.balance, tc.rate, got, tc.want)
		}
	}
}

func TestNewBarChart(t *testing.T) {
	every := func(_, _ int, l string) string { return l }
	for _, tc := range []struct {
		name       string
		values     []int
		wantH      []float64
		wantMax    int
		wantTotal  int
		wantFirstX float64
	}{
		{name: "scaled to the largest", values: []int{0, 5, 10}, wantH: []float64{0, chartHeight / 2, chartHeight}, wantMax: 10, wantTotal: 15, wantFirstX: chartGap / 2},
		{name: "all zero draws flat bars", values: []int{0, 0}, wantH: []float64{0, 0}, wantMax: 0, wantTotal: 0, wantFirstX: chartGap / 2},
		{name: "no values, no bars", values: nil, wantH: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := make([]string, len(tc.values))
			for i := range labels {
				labels[i] = string(rune('a' + i))
			}
			c := newBarChart(tc.values, labels, every)
			var hs []float64
			for i, b := range c.Bars {
				hs = append(hs, b.H)
				if b.Y+b.H != chartHeight {
					t.Errorf("bar %d stands on %v, want the axis at %d", i, b.Y+b.H, chartHeight)
				}
				if b.Value != tc.values[i] || b.Label != labels[i] || b.Tick != labels[i] {
					t.Errorf("bar %d is %+v", i, b)
				}
				if b.X+b.W > chartWidth {
					t.Errorf("bar %d ends at %v, past the width %d", i, b.X+b.W, chartWidth)
				}
			}
			if !slices.Equal(hs, tc.wantH) || c.Max != tc.wantMax || c.Total != tc.wantTotal {
				t.Errorf("heights %v max %d total %d, want %v %d %d", hs, c.Max, c.Total, tc.wantH, tc.wantMax, tc.wantTotal)
			}
			if len(c.Bars) > 0 && c.Bars[0].X != tc.wantFirstX {
				t.Errorf("first bar at x=%v, want %v", c.Bars[0].X, tc.wantFirstX)
			}
			// The first and last ticks are anchored to the chart's edges, so they are not cut off.
			if n := len(c.Bars); n > 1 {
				if first, last := c.Bars[0], c.Bars[n-1]; first.TickAnchor != "start" || first.TickX != 0 || last.TickAnchor != "end" || last.TickX != chartWidth {
					t.Errorf("edge ticks %s at %v and %s at %v", first.TickAnchor, first.TickX, last.TickAnchor, last.TickX)
				}
			}
		})
	}
}

func TestTicks(t *testing.T) {
	// The last day is always labelled, then every seventh before it.
	var got []string
	for i := range 10 {
		got = append(got, dayTick(i, 10, fmt.Sprintf("2026-11-%02d", i+1)))
	}
	want := []string{"", "", "3 Nov", "", "", "", "", "", "", "10 Nov"}
	if !slices.Equal(got, want) {
		t.Errorf("dayTick labels %q, want %q", got, want)
	}
	if hourTick(6, 24, "06:00") != "06" || hourTick(7, 24, "07:00") != "" {
		t.Error("hourTick labels other than every sixth hour")
	}
}
