package serve

import (
	"context"

	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// outboxBacklog feeds the outbox gauges, deferred deliveries included, from PostgreSQL.
func outboxBacklog(st *store.Store) metrics.OutboxReader {
	return metrics.OutboxReaderFunc(func(ctx context.Context) (metrics.OutboxBacklog, error) {
		n, oldest, err := st.OutboxBacklog(ctx)
		if err != nil {
			return metrics.OutboxBacklog{}, err
		}
		deferred, err := st.DeferredDeliveries(ctx)
		return metrics.OutboxBacklog{Waiting: n, Oldest: oldest, Deferred: deferred}, err
	})
}
