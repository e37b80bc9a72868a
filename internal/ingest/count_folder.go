package ingest

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// CallCountFolds is the store's part CountFolder needs.
type CallCountFolds interface {
	FoldCallCounts(ctx context.Context, max int) (int, error)
}

// CountFolder folds the call counts that reported calls leave as deltas into the count
// tables. The figures readers see are exact either way; folding keeps the pending rows few,
// so that reading them stays cheap. It runs on every replica (the database lets one fold at
// a time) and keeps going while kube-apiserver is away.
type CountFolder struct {
	Store CallCountFolds
	Clock clock.WithTicker
	Log   logr.Logger
	// Interval between folds (default 1 s); a fold that took a full Batch goes on at once.
	Interval time.Duration
	// Batch is the most deltas one fold moves (default 10,000).
	Batch int
}

// NeedLeaderElection is false: a fold needs no lease.
func (f *CountFolder) NeedLeaderElection() bool { return false }

// Start folds until ctx ends.
func (f *CountFolder) Start(ctx context.Context) error {
	if f.Interval <= 0 {
		f.Interval = time.Second
	}
	if f.Batch <= 0 {
		f.Batch = 10000
	}
	ticker := f.Clock.NewTicker(f.Interval)
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
		for ctx.Err() == nil {
			n, err := f.Store.FoldCallCounts(ctx, f.Batch)
			if err != nil {
				// Logged once per outage: the database being away is reported elsewhere too.
				if !failing && ctx.Err() == nil {
					f.Log.Error(err, "fold call counts")
				}
				failing = true
				break
			}
			failing = false
			if n < f.Batch {
				break
			}
		}
	}
}
