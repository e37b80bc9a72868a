package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// Many workers at once: every history row is committed when its call returns, a repeat
// keeps the first row, a row that finishes its event marks that event (and only it)
// dispatched, and event reads answer each caller with its own event.
func TestWebhookDeliveryStatementsBatchedAcrossCallers(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	at := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

	const n = 300
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		if _, err := st.SQL().Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at) VALUES ($1, $2, 'call.ended', $3, $4)`,
			ids[i], tenant.Account.ID, []byte(fmt.Sprintf(`{"n":%d}`, i)), at); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, recorded, err := st.EventForDelivery(ctx, ids[i], fmt.Sprintf("whd-%d", i))
			if err != nil || recorded || string(ev.Body) != fmt.Sprintf(`{"n":%d}`, i) || ev.Type != "call.ended" {
				errs <- fmt.Errorf("event %d: %q %v %v", i, ev.Body, recorded, err)
				return
			}
			for attempt := range 2 { // the second write of the same delivery keeps the first row
				row := store.FinishedDelivery{AccountPublicID: tenant.Account.PublicID,
					EndpointPublicID: "whep-a", DeliveryName: fmt.Sprintf("whd-%d", i), EventID: ids[i], EventType: "call.ended",
					Status: "succeeded", Attempts: 1 + attempt, ResponseCode: 204, CreatedAt: at, FinishedAt: at}
				if i%2 == 0 { // half with the event's partition key, half without (every partition searched)
					row.DispatchesEvent = ids[i]
					if i%4 == 0 {
						row.DispatchesEventCreatedAt = at
					}
				}
				if err := st.RecordFinishedDelivery(ctx, row); err != nil {
					errs <- err
					return
				}
				var attempts int
				if err := st.SQL().QueryRow(ctx, `SELECT attempts FROM webhook_delivery_history WHERE delivery_name = $1`,
					fmt.Sprintf("whd-%d", i)).Scan(&attempts); err != nil || attempts != 1 {
					errs <- fmt.Errorf("delivery %d: row not committed on return or overwritten: attempts %d, %v", i, attempts, err)
					return
				}
			}
			_, recorded, err = st.EventForDelivery(ctx, ids[i], fmt.Sprintf("whd-%d", i))
			if err != nil || !recorded {
				errs <- fmt.Errorf("event %d: recorded %v, %v", i, recorded, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// A missing event in a batch with present ones is ErrNotFound for its caller only.
	_, recorded, err := st.EventForDelivery(ctx, uuid.New(), "whd-0")
	if !errors.Is(err, store.ErrNotFound) || !recorded {
		t.Errorf("missing event: recorded %v, err %v; want recorded, ErrNotFound", recorded, err)
	}
	// A row of an unknown account is left out without failing the others.
	if err := st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: "acct_gone", EndpointPublicID: "whep-a",
		DeliveryName: "whd-gone", EventID: ids[0], EventType: "call.ended", Status: "failed", CreatedAt: at, FinishedAt: at}); err != nil {
		t.Errorf("unknown account: %v", err)
	}
	var rows int
	_ = st.SQL().QueryRow(ctx, `SELECT count(*) FROM webhook_delivery_history`).Scan(&rows)
	if rows != n {
		t.Errorf("%d history rows, want %d", rows, n)
	}
	var dispatched, wrong int
	if err := st.SQL().QueryRow(ctx, `SELECT count(*) FILTER (WHERE dispatched_at IS NOT NULL),
			count(*) FILTER (WHERE (dispatched_at IS NOT NULL) <> (id = ANY ($1)))
		FROM events`, evenIDs(ids)).Scan(&dispatched, &wrong); err != nil {
		t.Fatal(err)
	}
	if dispatched != n/2 || wrong != 0 {
		t.Errorf("%d events dispatched (%d of them or of the rest wrongly), want the %d whose rows finished them", dispatched, wrong, n/2)
	}
}

func evenIDs(ids []uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for i := 0; i < len(ids); i += 2 {
		out = append(out, ids[i])
	}
	return out
}
