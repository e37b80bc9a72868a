package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Recovery reads the whole delivery history, not only the partition the history table began
// with: once that one is dropped (a window after the migration), failed deliveries kept in the
// daily partitions are queued again.
func TestRecoveryReadsEveryHistoryPartition(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	now := time.Now().UTC().Truncate(time.Second)
	today := now.Truncate(24 * time.Hour)

	// The layout a month after the migration: its partition gone, daily ones in its place.
	parts, err := st.Partitions(ctx, store.DeliveryHistoryTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.Default && p.From.IsZero() {
			if err := st.DropPartition(ctx, store.DeliveryHistoryTable, p.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.CreatePartition(ctx, store.DeliveryHistoryTable, today, today.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}

	failed, succeeded := uuid.New(), uuid.New()
	for _, id := range []uuid.UUID{failed, succeeded} {
		if _, err := st.SQL().Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
			VALUES ($1, $2, 'call.ended', '{}', $3, $3)`, id, tenant.Account.ID, now.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for name, d := range map[string]struct {
		event  uuid.UUID
		status send.DeliveryStatus
	}{"whd-failed": {failed, "failed"}, "whd-ok": {succeeded, "succeeded"}} {
		if err := st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: tenant.Account.PublicID,
			EndpointPublicID: "whep-a", DeliveryName: name, EventID: d.event, EventType: "call.ended", Status: d.status,
			Attempts: 9, CreatedAt: now.Add(-time.Minute), FinishedAt: now}); err != nil {
			t.Fatal(err)
		}
	}

	queued, err := st.QueueRecovery(ctx, store.Recovery{AccountID: tenant.Account.ID, EndpointPublicID: "whep-a",
		Since: now.Add(-time.Hour), Now: now, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var resent int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FROM events WHERE resends = $1 AND endpoint_public_id = 'whep-a'`,
		failed).Scan(&resent); err != nil {
		t.Fatal(err)
	}
	if queued != 1 || resent != 1 {
		t.Errorf("recovery queued %d (%d resends of the failed delivery's event), want 1", queued, resent)
	}
}
