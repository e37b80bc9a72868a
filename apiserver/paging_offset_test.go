package apiserver

import (
	"math"
	"testing"
)

func TestPagingOffset(t *testing.T) {
	tests := []struct {
		page, perPage, want int
	}{
		{1, 25, 0},
		{2, 25, 25},
		{3, 200, 400},
		{math.MaxInt/100 + 1, 100, math.MaxInt / 100 * 100}, // the last page whose offset fits
		{math.MaxInt/100 + 2, 100, math.MaxInt},             // would overflow: as far as it goes
		{math.MaxInt, 1, math.MaxInt - 1},
		{math.MaxInt, 2, math.MaxInt},
	}
	for _, tt := range tests {
		if got := (Paging{Page: tt.page, PerPage: tt.perPage}).Offset(); got != tt.want {
			t.Errorf("page %d per_page %d: offset %d, want %d", tt.page, tt.perPage, got, tt.want)
		}
	}
}
