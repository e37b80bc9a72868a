package app

import (
	"context"

	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// outboxBacklog feeds the outbox gauges from PostgreSQL.
func outboxBacklog(st *store.Store) metrics.OutboxReader {
	return metrics.OutboxReaderFunc(func(ctx context.Context) (metrics.OutboxBacklog, error) {
		n, oldest, err := st.OutboxBacklog(ctx)
		return metrics.OutboxBacklog{Waiting: n, Oldest: oldest}, err
	})
}
