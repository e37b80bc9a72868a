package endpoints_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	clocktesting "k8s.io/utils/clock/testing"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// publicName resolves every host to one public address.
type publicName struct{}

func (publicName) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// TestEndpoints runs the service against a real kube-apiserver and PostgreSQL.
func TestEndpoints(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: run via make test")
	}
	env := testenv.Start(t)
	kube, st := env.Kube, env.Store
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	svc := &endpoints.Endpoints{Kube: kube, Reader: kube, Store: st, Clock: clk, URLPolicy: send.URLPolicy{Resolver: publicName{}}}
	newAccount := func(t *testing.T) endpoints.Account {
		a := apitest.NewTenant(t, st, plans.Business).Account
		return endpoints.AccountOf(a)
	}
	input := func() endpoints.Input {
		name, url, evts := "Hook", "https://hooks.example.com/in", []string{"call.ended"}
		return endpoints.Input{Name: &name, URL: &url, Events: &evts}
	}

	t.Run("the limit holds for creations at the same moment", func(t *testing.T) {
		acct := newAccount(t)
		const tries = 12
		var wg sync.WaitGroup
		errs := make([]error, tries)
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = svc.Create(context.Background(), acct, input())
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for _, err := range errs {
			var conflict *endpoints.ConflictError
			switch {
			case err == nil:
				created++
			case errors.As(err, &conflict):
				refused++
			default:
				t.Errorf("create: %v", err)
			}
		}
		eps, err := svc.List(context.Background(), acct.PublicID)
		if created != switchboardv1alpha1.MaxWebhookEndpointsPerAccount || refused != tries-created || err != nil || len(eps) != created {
			t.Errorf("created %d, refused %d, listed %d (%v)", created, refused, len(eps), err)
		}
		// Room again once one is removed.
		if err := svc.Delete(context.Background(), acct.PublicID, eps[0].Name); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Create(context.Background(), acct, input()); err != nil {
			t.Errorf("create after a removal: %v", err)
		}
	})

	t.Run("another account's endpoint is not found", func(t *testing.T) {
		owner, other := newAccount(t), newAccount(t)
		ep, _, err := svc.Create(context.Background(), owner, input())
		if err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"get":        func() error { _, err := svc.Get(context.Background(), other.PublicID, ep.Name); return err }(),
			"test":       svc.Test(context.Background(), other, ep.Name, nil),
			"resend":     svc.Resend(context.Background(), other, ep.Name, uuid.NewString(), nil),
			"delete":     svc.Delete(context.Background(), other.PublicID, ep.Name),
			"bad name":   svc.Delete(context.Background(), owner.PublicID, "zz_Bad..ID"),
			"deliveries": func() error { _, err := svc.Deliveries(context.Background(), other, ep.Name); return err }(),
		} {
			if !errors.Is(err, endpoints.ErrEndpointNotFound) {
				t.Errorf("%s: %v", name, err)
			}
		}
	})

	t.Run("deliveries merge live and finished; resend follows the rule", func(t *testing.T) {
		ctx := context.Background()
		acct := newAccount(t)
		ep, _, err := svc.Create(ctx, acct, input())
		if err != nil {
			t.Fatal(err)
		}
		now := clk.Now()
		record := func(status send.DeliveryStatus, age time.Duration) uuid.UUID {
			ev := uuid.New()
			// The event, dispatched long ago (a resend sends its body again).
			if _, err := storetest.SQL(t, st).Exec(ctx, `INSERT INTO events (id, account_id, type, body, created_at, dispatched_at)
				VALUES ($1, $2, 'call.ended', '{}', $3, $3)`, ev, acct.ID, now.Add(-age)); err != nil {
				t.Fatal(err)
			}
			if err := st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: acct.PublicID, EndpointPublicID: ep.Name,
				DeliveryName: send.DeliveryName(ev.String(), ep.Name, ""), EventID: ev, EventType: "call.ended", Status: status,
				Attempts: 1, CreatedAt: now.Add(-age), FinishedAt: now.Add(-age)}); err != nil {
				t.Fatal(err)
			}
			return ev
		}
		failed := record(send.DeliveryFailed, 2*time.Hour)
		succeeded := record(send.DeliverySucceeded, time.Hour)
		record(send.DeliveryCancelled, 31*24*time.Hour) // past the 30 days
		ds, err := svc.Deliveries(ctx, acct, ep.Name)
		if err != nil || len(ds) != 2 || ds[0].EventID != succeeded.String() || ds[1].Status != send.DeliveryFailed {
			t.Fatalf("deliveries %+v %v", ds, err)
		}

		var conflict *endpoints.ConflictError
		if err := svc.Resend(ctx, acct, ep.Name, succeeded.String(), nil); !errors.As(err, &conflict) {
			t.Errorf("resend a success: %v", err)
		}
		if err := svc.Resend(ctx, acct, ep.Name, uuid.NewString(), nil); !errors.Is(err, endpoints.ErrDeliveryNotFound) {
			t.Errorf("resend an unknown event: %v", err)
		}
		if err := svc.Resend(ctx, acct, ep.Name, failed.String(), nil); err != nil {
			t.Fatalf("resend: %v", err)
		}
		// The resend is queued in the outbox and listed as pending, ahead of its failed original.
		ds, err = svc.Deliveries(ctx, acct, ep.Name)
		if err != nil || len(ds) != 3 {
			t.Fatalf("deliveries after resend %+v %v", ds, err)
		}
		var pending, original int
		for _, d := range ds {
			if d.EventID == failed.String() && d.Status == send.DeliveryPending {
				pending++
			}
			if d.EventID == failed.String() && d.Status == send.DeliveryFailed {
				original++
			}
		}
		if pending != 1 || original != 1 {
			t.Errorf("deliveries after resend %+v", ds)
		}
		if err := svc.Resend(ctx, acct, ep.Name, failed.String(), nil); !errors.As(err, &conflict) {
			t.Errorf("resend while the resend is pending: %v", err)
		}
	})

	t.Run("an event in the outbox is listed pending until its history row", func(t *testing.T) {
		ctx := context.Background()
		acct := newAccount(t)
		ep, _, err := svc.Create(ctx, acct, input())
		if err != nil {
			t.Fatal(err)
		}
		ev := uuid.New()
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.EnqueueEvents(ctx, []events.Event{{ID: ev, AccountID: acct.ID, Type: events.CallEnded, Body: []byte(`{}`),
				CreatedAt: clk.Now()}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		name := send.DeliveryName(ev.String(), ep.Name, "")
		listed := func(want send.DeliveryStatus) {
			t.Helper()
			ds, err := svc.Deliveries(ctx, acct, ep.Name)
			if err != nil || len(ds) != 1 || ds[0].Name != name || ds[0].EventID != ev.String() || ds[0].Status != want {
				t.Fatalf("deliveries %+v %v, want one %s", ds, err, want)
			}
		}
		listed(send.DeliveryPending)
		// The engine claimed it and its first attempt is in flight: still pending, and not
		// resendable.
		if _, err := st.ClaimEvents(ctx, 100, clk.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		listed(send.DeliveryPending)
		var conflict *endpoints.ConflictError
		if err := svc.Resend(ctx, acct, ep.Name, ev.String(), nil); !errors.As(err, &conflict) {
			t.Errorf("resend while the first attempt is in flight: %v", err)
		}
		// It succeeded: the history row wins while the event waits to be marked dispatched.
		if err := st.RecordFinishedDelivery(ctx, store.FinishedDelivery{AccountPublicID: acct.PublicID, EndpointPublicID: ep.Name,
			DeliveryName: name, EventID: ev, EventType: events.CallEnded, Status: send.DeliverySucceeded, Attempts: 1,
			CreatedAt: clk.Now(), FinishedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		listed(send.DeliverySucceeded)
	})
}
