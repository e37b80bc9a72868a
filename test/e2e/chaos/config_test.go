package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantSeed int64
		wantD    time.Duration
		wantErr  bool
	}{
		{name: "defaults", env: map[string]string{}, wantSeed: 7, wantD: DefaultDuration},
		{name: "seed and duration", env: map[string]string{"CHAOS_SEED": "-12", "CHAOS_DURATION": "30m"}, wantSeed: -12, wantD: 30 * time.Minute},
		{name: "bad seed", env: map[string]string{"CHAOS_SEED": "abc"}, wantErr: true},
		{name: "bad duration", env: map[string]string{"CHAOS_DURATION": "thirty"}, wantErr: true},
		{name: "non-positive duration", env: map[string]string{"CHAOS_DURATION": "0s"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seed, d, err := Config(func(k string) string { return tc.env[k] }, func() int64 { return 7 })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (seed != tc.wantSeed || d != tc.wantD) {
				t.Fatalf("got seed %d, %v; want %d, %v", seed, d, tc.wantSeed, tc.wantD)
			}
		})
	}
}

func TestFlaps(t *testing.T) {
	a, b := Flaps(5, 1000), Flaps(5, 1000)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 5 gave two sequences of answers")
	}
	if reflect.DeepEqual(a, Flaps(6, 1000)) {
		t.Fatal("seeds 5 and 6 gave the same answers")
	}
	count := map[Answer]int{}
	for _, x := range a {
		count[x]++
	}
	// Half are 200 and a sixth each of the others, give or take sampling noise over 1000.
	tests := []struct {
		a        Answer
		min, max int
	}{
		{OK, 430, 570}, {ServerError, 110, 230}, {Timeout, 110, 230}, {Slow, 110, 230},
	}
	for _, tc := range tests {
		if c := count[tc.a]; c < tc.min || c > tc.max {
			t.Errorf("%v: %d of 1000, want %d–%d", tc.a, c, tc.min, tc.max)
		}
	}
}
