package retention

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// maxInterval bounds the time between runs, so the alerts' gauges stay fresh.
const maxInterval = 5 * time.Minute

// Maintainer runs on the leader: at start and then every Interval it creates the partitions
// Plan asks for, drops the expired ones and prunes the smaller tables. One run's failure is
// logged and counted (switchboard_retention_runs_total); the next run tries again.
type Maintainer struct {
	Store  store.Retention
	Config Config
	Clock  clock.WithTicker
	Log    logr.Logger
}

// NeedLeaderElection: one maintainer at a time.
func (m *Maintainer) NeedLeaderElection() bool { return true }

// Interval is the time between runs: a quarter of a partition, at most maxInterval.
func (m *Maintainer) Interval() time.Duration {
	return min(m.Config.WithDefaults().PartitionWidth/4, maxInterval)
}

// Start runs until ctx ends.
func (m *Maintainer) Start(ctx context.Context) error {
	ticker := m.Clock.NewTicker(m.Interval())
	defer ticker.Stop()
	for {
		if err := m.Run(ctx); err != nil && ctx.Err() == nil {
			m.Log.Error(err, "retention run failed; retrying at the next run")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// Run is one pass over every table.
func (m *Maintainer) Run(ctx context.Context) error {
	c := m.Config.WithDefaults()
	var errs []error
	for _, table := range store.PartitionedTables {
		errs = append(errs, m.keep(ctx, c, table))
	}
	now := m.Clock.Now()
	if n, err := m.Store.PruneCallProgress(ctx, now.Add(-c.CallProgressKeep), 5000); err != nil {
		errs = append(errs, err)
	} else {
		metrics.RetentionPruned("call_progress", n)
	}
	if n, err := m.Store.PruneSwitchOffNotices(ctx, now.Add(-c.Window)); err != nil {
		errs = append(errs, err)
	} else {
		metrics.RetentionPruned("webhook_switchoff_notices", n)
	}
	if n, err := m.Store.PruneSecretReveals(ctx, now.Add(-store.SecretRevealsKept)); err != nil {
		errs = append(errs, err)
	} else {
		metrics.RetentionPruned("webhook_secret_reveals", n)
	}
	err := errors.Join(errs...)
	metrics.RetentionRun(err == nil)
	return err
}

func (m *Maintainer) keep(ctx context.Context, c Config, table string) error {
	now := m.Clock.Now()
	parts, err := m.Store.Partitions(ctx, table)
	if err != nil {
		return err
	}
	create, drop := Plan(now, c, parts)
	var errs []error
	for _, r := range create {
		if err := m.Store.CreatePartition(ctx, table, r.From, r.To); err != nil {
			errs = append(errs, err)
			break // the next ranges start where this one ends
		}
		m.Log.V(1).Info("partition created", "table", table, "from", r.From, "to", r.To)
	}
	for _, p := range drop {
		switch err := m.Store.DropPartition(ctx, table, p.Name); {
		case errors.Is(err, store.ErrUndispatched):
			metrics.RetentionDropRefused(table)
			m.Log.Info("an expired partition still holds events not yet dispatched: kept until they are", "partition", p.Name)
		case err != nil:
			errs = append(errs, err)
		default:
			metrics.RetentionDropped(table)
			m.Log.Info("partition dropped", "table", table, "partition", p.Name, "before", p.To)
		}
	}
	if err := m.observe(ctx, table, now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// observe sets the table's gauges from what exists now.
func (m *Maintainer) observe(ctx context.Context, table string, now time.Time) error {
	parts, err := m.Store.Partitions(ctx, table)
	if err != nil {
		return err
	}
	rows, err := m.Store.DefaultPartitionRows(ctx, table, 10000)
	if err != nil {
		return err
	}
	size, err := m.Store.TableBytes(ctx, table)
	if err != nil {
		return err
	}
	if rows > 0 {
		m.Log.Info("rows arrived with no partition for them (the DEFAULT partition holds them; the next partition created takes them over)",
			"table", table, "rows", rows)
	}
	metrics.RetentionTable(table, rows, CoveredUntil(parts).Sub(now), size)
	return nil
}
