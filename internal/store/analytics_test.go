package store

import (
	"testing"
	"time"
)

func TestAnalyticsWindow(t *testing.T) {
	london, _ := time.LoadLocation("Europe/London")
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	tests := []struct {
		name      string
		now       time.Time
		loc       *time.Location
		days      int
		from, to  time.Time
		firstDate string
		lastDate  string
	}{
		{"london summer, after UTC midnight", time.Date(2026, 6, 30, 23, 30, 0, 0, time.UTC), london, 7,
			time.Date(2026, 6, 25, 0, 0, 0, 0, london), time.Date(2026, 7, 2, 0, 0, 0, 0, london), "2026-06-25", "2026-07-01"},
		{"across the clocks going back", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), london, 30,
			time.Date(2026, 10, 3, 0, 0, 0, 0, london), time.Date(2026, 11, 2, 0, 0, 0, 0, london), "2026-10-03", "2026-11-01"},
		{"half-hour zone", time.Date(2026, 7, 14, 18, 40, 0, 0, time.UTC), kolkata, 90,
			time.Date(2026, 4, 17, 0, 0, 0, 0, kolkata), time.Date(2026, 7, 16, 0, 0, 0, 0, kolkata), "2026-04-17", "2026-07-15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to, dates := AnalyticsWindow(tt.now, tt.loc, tt.days)
			if !from.Equal(tt.from) || !to.Equal(tt.to) {
				t.Errorf("window = [%v, %v), want [%v, %v)", from, to, tt.from, tt.to)
			}
			if len(dates) != tt.days || dates[0] != tt.firstDate || dates[len(dates)-1] != tt.lastDate {
				t.Errorf("dates = %d from %s to %s", len(dates), dates[0], dates[len(dates)-1])
			}
			seen := map[string]bool{}
			for _, d := range dates {
				if seen[d] {
					t.Errorf("date %s twice", d)
				}
				seen[d] = true
			}
		})
	}
}

func TestRoundedRatio(t *testing.T) {
	tests := []struct {
		num, den int64
		want     int
	}{
		{0, 0, 0}, {5, 0, 0}, {0, 7, 0}, {200, 7, 29}, {100, 3, 33}, {200, 3, 67}, {300, 8, 38}, {250, 10, 25},
		{91, 2, 46}, {100, 1, 100},
	}
	for _, tt := range tests {
		if got := roundedRatio(tt.num, tt.den); got != tt.want {
			t.Errorf("roundedRatio(%d, %d) = %d, want %d", tt.num, tt.den, got, tt.want)
		}
	}
}

func TestCallPeriodBuckets(t *testing.T) {
	at := func(h, m int) *time.Time { v := time.Date(2026, 7, 2, h, m, 0, 0, time.UTC); return &v }
	if !wholeUTCHour(nil) || !wholeUTCHour(at(5, 0)) || wholeUTCHour(at(5, 30)) {
		t.Error("wholeUTCHour")
	}
	london, _ := time.LoadLocation("Europe/London")
	midnight := time.Date(2026, 7, 2, 0, 0, 0, 0, london) // 23:00 UTC on the 1st
	if !wholeUTCHour(&midnight) {
		t.Error("a London midnight is a whole UTC hour")
	}
	if got := ceilUTCDay(midnight); !got.Equal(time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ceilUTCDay(%v) = %v", midnight, got)
	}
	if got := ceilUTCDay(*at(0, 0)); !got.Equal(*at(0, 0)) {
		t.Errorf("ceilUTCDay of a UTC midnight = %v", got)
	}
}

func TestCallLikeContains(t *testing.T) {
	for in, want := range map[string]string{"acme": "%acme%", "100%": `%100\%%`, "a_b": `%a\_b%`, `c:\x`: `%c:\\x%`} {
		if got := callLikeContains(in); got != want {
			t.Errorf("callLikeContains(%q) = %q, want %q", in, got, want)
		}
	}
}
