package engine

import "testing"

func TestKeepsAttempt(t *testing.T) {
	for _, c := range []struct {
		attempt int
		ok      bool
		want    bool
	}{
		{1, true, false}, // the history row says it all
		{1, false, true}, // a retry follows: the first attempt is shown beside it
		{2, false, true},
		{2, true, true},
		{6, false, true},
	} {
		if got := KeepsAttempt(c.attempt, c.ok); got != c.want {
			t.Errorf("KeepsAttempt(%d, %v) = %v, want %v", c.attempt, c.ok, got, c.want)
		}
	}
}
