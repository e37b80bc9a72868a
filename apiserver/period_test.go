package apiserver

import (
	"testing"
	"time"
)

func TestPeriodWindow(t *testing.T) {
	london, _ := time.LoadLocation("Europe/London")
	// 00:30 on 1 July in London is still 30 June in UTC: days follow the account's zone.
	now := time.Date(2026, 6, 30, 23, 30, 0, 0, time.UTC)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, london) }
	tests := []struct {
		period         string
		from, to       time.Time
		hasFrom, hasTo bool
		wantFrom       *time.Time
		wantTo         *time.Time
		wantErr        string
	}{
		{period: "all"},
		{period: "today", wantFrom: ptr(d(2026, 7, 1)), wantTo: ptr(d(2026, 7, 2))},
		{period: "7d", wantFrom: ptr(d(2026, 6, 25)), wantTo: ptr(d(2026, 7, 2))},
		{period: "30d", wantFrom: ptr(d(2026, 6, 2)), wantTo: ptr(d(2026, 7, 2))},
		{period: "month", wantFrom: ptr(d(2026, 7, 1)), wantTo: ptr(d(2026, 8, 1))},
		{period: "custom", from: d(2026, 3, 1), hasFrom: true, to: d(2026, 3, 31), hasTo: true, wantFrom: ptr(d(2026, 3, 1)), wantTo: ptr(d(2026, 4, 1))},
		{period: "custom", from: d(2026, 3, 1), hasFrom: true, wantFrom: ptr(d(2026, 3, 1))},
		{period: "custom", from: d(2026, 4, 1), hasFrom: true, to: d(2026, 3, 31), hasTo: true, wantErr: "date_from"},
		{period: "custom", wantErr: "date_from"},
		{period: "today", from: d(2026, 3, 1), hasFrom: true, wantErr: "period"},
	}
	for _, tt := range tests {
		fe := fieldErrors{}
		w := periodWindow(fe, tt.period, tt.from, tt.hasFrom, tt.to, tt.hasTo, london, now)
		if tt.wantErr != "" {
			if _, ok := fe[tt.wantErr]; !ok {
				t.Errorf("%s: want an error on %s, got %v", tt.period, tt.wantErr, fe)
			}
			continue
		}
		if fe.any() {
			t.Errorf("%s: unexpected errors %v", tt.period, fe)
		}
		if !sameTime(w.From, tt.wantFrom) || !sameTime(w.To, tt.wantTo) {
			t.Errorf("%s: got [%v, %v), want [%v, %v)", tt.period, w.From, w.To, tt.wantFrom, tt.wantTo)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
