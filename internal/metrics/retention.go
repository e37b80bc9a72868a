package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Retention of the outbox and the delivery history (internal/retention), set by the leader's
// maintainer after each run; the table label is events or webhook_delivery_history.
var (
	retentionDefaultRows = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_retention_default_partition_rows",
		Help: "Rows in a table's DEFAULT partition (counted up to 10000): rows that arrived with no dated partition for them. Should be 0.",
	}, []string{"table"})
	retentionAhead = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_retention_partitions_ahead_seconds",
		Help: "How far past now a table's dated partitions reach (negative: new rows go to the DEFAULT partition).",
	}, []string{"table"})
	retentionBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_retention_table_bytes",
		Help: "Size of a partitioned table: its partitions, their indexes and TOAST.",
	}, []string{"table"})
	retentionDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_retention_partitions_dropped_total",
		Help: "Partitions dropped after the retention window.",
	}, []string{"table"})
	retentionRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_retention_drops_refused_total",
		Help: "Expired partitions kept because they hold outbox events not yet dispatched.",
	}, []string{"table"})
	retentionRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_retention_runs_total",
		Help: "Runs of the retention maintainer by result: ok, error.",
	}, []string{"result"})
	retentionPruned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_retention_rows_pruned_total",
		Help: "Rows deleted by the retention maintainer's pruners, by table.",
	}, []string{"table"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(retentionDefaultRows, retentionAhead, retentionBytes, retentionDropped,
		retentionRefused, retentionRuns, retentionPruned)
}

// RetentionTable records what the maintainer saw of table at the end of a run.
func RetentionTable(table string, defaultRows int64, ahead time.Duration, bytes int64) {
	retentionDefaultRows.WithLabelValues(table).Set(float64(defaultRows))
	retentionAhead.WithLabelValues(table).Set(ahead.Seconds())
	retentionBytes.WithLabelValues(table).Set(float64(bytes))
}

// RetentionDropped counts a dropped partition of table.
func RetentionDropped(table string) { retentionDropped.WithLabelValues(table).Inc() }

// RetentionDropRefused counts an expired partition of table kept for its undispatched events.
func RetentionDropRefused(table string) { retentionRefused.WithLabelValues(table).Inc() }

// RetentionRun counts a maintainer run.
func RetentionRun(ok bool) {
	if ok {
		retentionRuns.WithLabelValues("ok").Inc()
		return
	}
	retentionRuns.WithLabelValues("error").Inc()
}

// RetentionPruned counts rows a pruner deleted from table.
func RetentionPruned(table string, rows int64) {
	retentionPruned.WithLabelValues(table).Add(float64(rows))
}
