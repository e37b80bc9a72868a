package engine

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestCacheFresh(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written store.EndpointsWritten
		seen    uint64
		want    bool
	}{
		{"no write on record", store.EndpointsWritten{}, 0, true},
		{"no write on record, cache past others", store.EndpointsWritten{}, 900, true},
		{"cache has seen the write", store.EndpointsWritten{Version: 500}, 500, true},
		{"cache is past the write", store.EndpointsWritten{Version: 500}, 501, true},
		{"cache is behind the write", store.EndpointsWritten{Version: 500}, 499, false},
		{"write under way", store.EndpointsWritten{Pending: true}, 900, false},
		{"write under way after an older one", store.EndpointsWritten{Version: 500, Pending: true}, 900, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CacheFresh(tc.written, tc.seen); got != tc.want {
				t.Fatalf("CacheFresh(%+v, %d) = %v, want %v", tc.written, tc.seen, got, tc.want)
			}
		})
	}
}
