package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// DefaultDuration is the length of the run in `make test`: long enough for every kind of
// fault with DefaultOptions.
const DefaultDuration = 5 * time.Minute

// Config reads CHAOS_SEED and CHAOS_DURATION (through getenv, e.g. os.Getenv). Without
// CHAOS_SEED the seed is fresh (from fresh), and the run prints it so it can be replayed.
func Config(getenv func(string) string, fresh func() int64) (seed int64, d time.Duration, err error) {
	d = DefaultDuration
	if v := getenv("CHAOS_DURATION"); v != "" {
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("CHAOS_DURATION=%q: want a positive Go duration such as 30m", v)
		}
	}
	if v := getenv("CHAOS_SEED"); v != "" {
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("CHAOS_SEED=%q: want an integer", v)
		}
		return seed, d, nil
	}
	return fresh(), d, nil
}

// Answer is how the flapping receiver answers one delivery.
type Answer int

const (
	// OK answers 200 at once.
	OK Answer = iota
	// ServerError answers 500.
	ServerError
	// Timeout holds the request past the sender's timeout.
	Timeout
	// Slow answers 200 after a delay still within the sender's timeout.
	Slow
)

func (a Answer) String() string {
	return [...]string{"200", "500", "timeout", "slow"}[a]
}

// Flaps draws the flapping receiver's first n answers from seed: half 200, the rest split
// between 500, timeouts and slow answers.
func Flaps(seed int64, n int) []Answer {
	r := rand.New(rand.NewPCG(uint64(seed), 0xf1a9))
	out := make([]Answer, n)
	for i := range out {
		switch x := r.IntN(6); {
		case x < 3:
			out[i] = OK
		default:
			out[i] = Answer(x - 2)
		}
	}
	return out
}
