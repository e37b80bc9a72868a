package apiserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func (h *webhookHarness) testRecover(t *testing.T) {
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.st, plans.Business)
	key := tenant.OwnerKey
	id := h.create(t, key, "https://hooks.example.com/rec")["public_id"].(string)
	now := h.clk.Now()
	event := func(age time.Duration) uuid.UUID {
		ev := uuid.New()
		if _, err := storetest.SQL(t, h.st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
			VALUES ($1, $2, 'call.ended', $3, $4, $4)`, ev, tenant.Account.ID, []byte(`{"event":"call.ended"}`), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	record := func(ev uuid.UUID, salt string, status send.DeliveryStatus, age time.Duration) {
		err := h.st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: tenant.Account.PublicID, EndpointPublicID: id,
			DeliveryName: send.DeliveryName(ev.String(), id, salt), EventID: ev, EventType: "call.ended", Status: status, Attempts: 1,
			CreatedAt: now.Add(-age), FinishedAt: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
	}
	failed := event(2 * time.Hour)
	record(failed, "", "failed", 2*time.Hour)
	cancelled := event(3 * time.Hour)
	record(cancelled, "", "cancelled", 3*time.Hour)
	twiceFailed := event(6 * time.Hour) // failed, resent, failed again: recovered once
	record(twiceFailed, "", "failed", 6*time.Hour)
	record(twiceFailed, "resend-1", "failed", 5*time.Hour)
	healed := event(5 * time.Hour) // failed, then a resend succeeded
	record(healed, "", "failed", 5*time.Hour)
	record(healed, "resend-1", "succeeded", 4*time.Hour)
	record(event(time.Hour), "", "succeeded", time.Hour)
	before := event(48 * time.Hour) // failed before since
	record(before, "", "failed", 48*time.Hour)
	busy := event(4 * time.Hour) // failed, and a resend is with the controller
	record(busy, "", "failed", 4*time.Hour)
	if err := h.kube.Create(ctx, send.NewDelivery(h.endpoint(t, tenant, id), busy.String(), "call.ended", "", "resend-x")); err != nil {
		t.Fatal(err)
	}
	// Cancelled (the endpoint was paused) and recorded, but the reader still lists its
	// resource, as a cache does until it sees the removal: finished, so recovered.
	justCancelled := event(90 * time.Minute)
	record(justCancelled, "", "cancelled", 90*time.Minute)
	stale := send.NewDelivery(h.endpoint(t, tenant, id), justCancelled.String(), "call.ended", "", "")
	if err := h.kube.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}

	since := now.Add(-24 * time.Hour).Format(time.RFC3339)
	recoverWith := func(body any, headers http.Header) *apitest.Response {
		return h.api.DoWithHeaders(t, key, "POST", "/v1/webhooks/"+id+"/recover", body, headers)
	}
	resp := recoverWith(map[string]any{"since": since}, http.Header{"Idempotency-Key": {"recover-1"}})
	if resp.Status != 202 || resp.Map(t)["queued"] != float64(4) {
		t.Fatalf("recover: %s", resp)
	}
	if err := h.kube.Delete(ctx, stale); err != nil {
		t.Fatal(err)
	}
	queuedFor := func() map[string]int {
		qs, err := h.st.QueuedDeliveriesFor(ctx, tenant.Account.ID, store.QueuedFilter{EndpointPublicID: id, Since: now.Add(-time.Hour), Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, q := range qs {
			if q.Resend {
				out[q.EventID.String()]++
			}
		}
		return out
	}
	want := map[string]int{failed.String(): 1, cancelled.String(): 1, twiceFailed.String(): 1, justCancelled.String(): 1}
	if got := queuedFor(); len(got) != len(want) || got[failed.String()] != 1 || got[cancelled.String()] != 1 || got[twiceFailed.String()] != 1 ||
		got[justCancelled.String()] != 1 {
		t.Fatalf("queued resends %v, want %v", got, want)
	}
	// The same Idempotency-Key replays the answer; a new request adds nothing while they wait.
	if resp := recoverWith(map[string]any{"since": since}, http.Header{"Idempotency-Key": {"recover-1"}}); resp.Status != 202 ||
		resp.Header.Get("Idempotent-Replayed") != "true" || resp.Map(t)["queued"] != float64(4) {
		t.Errorf("replay: %s", resp)
	}
	if resp := recoverWith(map[string]any{"since": since}, nil); resp.Status != 202 || resp.Map(t)["queued"] != float64(0) {
		t.Errorf("second recover while queued: %s", resp)
	}
	// The dispatcher makes fresh deliveries of the same events; they are under way, so again nothing.
	dispatcher := &engine.Dispatcher{Client: h.kube, Reader: h.kube, Store: h.st, Clock: h.clk, Log: logr.Discard()}
	if _, err := dispatcher.DispatchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for ev := range want {
		list := &switchboardv1alpha1.WebhookDeliveryList{}
		if err := h.kube.List(ctx, list, client.MatchingLabels{send.LabelEventID: ev}); err != nil || len(list.Items) != 1 ||
			list.Items[0].Spec.ResendOf == "" || list.Items[0].Spec.EventID != ev {
			t.Errorf("recovered delivery of %s: %+v %v", ev, list.Items, err)
		}
	}
	if resp := recoverWith(map[string]any{"since": since}, nil); resp.Status != 202 || resp.Map(t)["queued"] != float64(0) {
		t.Errorf("recover while delivering: %s", resp)
	}

	h.clk.Step(time.Minute) // a new window of the recover limit
	other := apitest.NewTenant(t, h.st, plans.Business)
	for _, c := range []struct {
		key  string
		path string
		body any
		want int
	}{
		{key, id, map[string]any{}, 422},
		{key, id, map[string]any{"since": "yesterday"}, 422},
		{key, id, map[string]any{"since": now.Add(-31 * 24 * time.Hour).Format(time.RFC3339)}, 422},
		{key, id, map[string]any{"since": now.Add(time.Hour).Format(time.RFC3339)}, 422},
		{key, id, "{", 400},
		{key, "whep-missing", map[string]any{"since": since}, 404},
		{other.OwnerKey, id, map[string]any{"since": since}, 404},
	} {
		if c.want == 400 {
			h.clk.Step(time.Minute) // five a minute
		}
		if resp := h.api.Do(t, c.key, "POST", "/v1/webhooks/"+c.path+"/recover", c.body); resp.Status != c.want {
			t.Errorf("recover %s %v: %s, want %d", c.path, c.body, resp, c.want)
		}
	}
	h.clk.Step(time.Minute)
	h.api.Do(t, key, "PATCH", "/v1/webhooks/"+id, map[string]any{"status": "paused"})
	for i := 1; i <= 6; i++ {
		resp := recoverWith(map[string]any{"since": since}, nil)
		if (i <= 5 && resp.Status != 409) || (i == 6 && (resp.Status != 429 || resp.Header.Get("Retry-After") == "")) {
			t.Fatalf("recover %d on a paused endpoint: %s", i, resp)
		}
	}
}
