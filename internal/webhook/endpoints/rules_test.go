package endpoints

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

func TestCheckRoom(t *testing.T) {
	business := Account{Status: "active", Plan: plans.Business}
	for existing, want := range map[int]bool{0: true, 4: true, 5: false, 6: false} {
		err := checkRoom(existing)
		var conflict *ConflictError
		if (err == nil) != want || (err != nil && !errors.As(err, &conflict)) || CanAdd(business, existing) != want {
			t.Errorf("%d endpoints: %v, want room %v", existing, err, want)
		}
	}
	// Adding needs Integrations too, whatever the room.
	for _, acct := range []Account{{Status: "active", Plan: plans.Team}, {Status: "paused", Plan: plans.Business},
		{Status: "active", Plan: plans.Business, IntegrationsDisabled: true}} {
		if CanAdd(acct, 0) {
			t.Errorf("%+v may add an endpoint without passing the Integrations gate", acct)
		}
	}
}

func TestResendRule(t *testing.T) {
	active := &switchboardv1alpha1.WebhookEndpoint{}
	paused := &switchboardv1alpha1.WebhookEndpoint{Spec: switchboardv1alpha1.WebhookEndpointSpec{Paused: true}}
	off := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{send.AnnotationSwitchedOff: "x"}},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{Paused: true}}
	d := func(name string, s send.DeliveryStatus) Delivery { return Delivery{Name: name, Status: s} }
	for _, tc := range []struct {
		name     string
		recs     []Delivery
		ep       *switchboardv1alpha1.WebhookEndpoint
		want     string // delivery resent; "" for a refusal
		notFound bool
		conflict string // part of the 409 message
	}{
		{name: "no delivery", ep: active, notFound: true},
		{name: "failed", recs: []Delivery{d("a", send.DeliveryFailed)}, ep: active, want: "a"},
		{name: "cancelled", recs: []Delivery{d("a", send.DeliveryCancelled)}, ep: active, want: "a"},
		{name: "succeeded", recs: []Delivery{d("a", send.DeliverySucceeded)}, ep: active, conflict: "this one succeeded"},
		{name: "pending", recs: []Delivery{d("a", send.DeliveryPending)}, ep: active, conflict: "still being delivered"},
		{name: "an older resend still retrying", recs: []Delivery{d("b", send.DeliveryFailed), d("a", send.DeliveryRetrying)},
			ep: active, conflict: "still being delivered"},
		{name: "latest of several", recs: []Delivery{d("b", send.DeliveryCancelled), d("a", send.DeliverySucceeded)}, ep: active, want: "b"},
		{name: "latest succeeded after a failure", recs: []Delivery{d("b", send.DeliverySucceeded), d("a", send.DeliveryFailed)},
			ep: active, conflict: "this one succeeded"},
		{name: "paused endpoint", recs: []Delivery{d("a", send.DeliveryFailed)}, ep: paused, conflict: "is paused"},
		{name: "switched-off endpoint", recs: []Delivery{d("a", send.DeliveryFailed)}, ep: off, conflict: "switched off"},
		{name: "in progress wins over paused", recs: []Delivery{d("a", send.DeliveryPending)}, ep: paused, conflict: "still being delivered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResendRule(tc.recs, tc.ep)
			var conflict *ConflictError
			switch {
			case tc.notFound:
				if !errors.Is(err, ErrDeliveryNotFound) {
					t.Errorf("got %v %v, want not found", got, err)
				}
			case tc.conflict != "":
				if !errors.As(err, &conflict) || !strings.Contains(conflict.Message, tc.conflict) {
					t.Errorf("got %v %v, want a conflict saying %q", got, err, tc.conflict)
				}
			default:
				if err != nil || got.Name != tc.want {
					t.Errorf("got %v %v, want %s", got, err, tc.want)
				}
			}
		})
	}
}

func TestMerge(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	since := now.Add(-DeliveriesDays * 24 * time.Hour)
	ev := uuid.MustParse("0b6f7f8e-8d1c-4e5a-9d0e-7f1b6a2c3d4e")
	next := metav1.NewTime(now.Add(time.Minute))
	live := func(name, endpoint string, age time.Duration, phase switchboardv1alpha1.WebhookDeliveryPhase) switchboardv1alpha1.WebhookDelivery {
		return switchboardv1alpha1.WebhookDelivery{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec:       switchboardv1alpha1.WebhookDeliverySpec{EndpointName: endpoint, EventID: ev.String(), EventType: "call.ended"},
			Status:     switchboardv1alpha1.WebhookDeliveryStatus{Phase: phase, Attempts: 2, LastResponseCode: 503, NextAttemptAt: &next},
		}
	}
	hist := func(name string, age time.Duration, s send.DeliveryStatus) store.FinishedDelivery {
		return store.FinishedDelivery{DeliveryName: name, EventID: ev, EventType: "call.ended", Status: s, Attempts: 1,
			CreatedAt: now.Add(-age)}
	}
	queuedID := uuid.MustParse("5f0c2d1e-3b4a-4c5d-8e6f-7a8b9c0d1e2f")
	resendID := uuid.MustParse("6a1d3e2f-4c5b-4d6e-9f70-8b9cad1e2f30")
	got := Merge("whep-a",
		[]store.QueuedDelivery{
			{OutboxID: queuedID, EventID: queuedID, Type: "test", CreatedAt: now.Add(-time.Second)},
			{OutboxID: ev, EventID: ev, Type: "test", CreatedAt: now.Add(-time.Minute)}, // dispatched meanwhile: this is a live one below
			{OutboxID: resendID, EventID: ev, Type: "call.ended", Resend: true, CreatedAt: now.Add(-30 * time.Second)},
		},
		[]switchboardv1alpha1.WebhookDelivery{
			live("whdl-retrying", "whep-a", 2*time.Hour, switchboardv1alpha1.WebhookDeliveryPhaseRetrying),
			live("whdl-finishing", "whep-a", 3*time.Hour, switchboardv1alpha1.WebhookDeliveryPhaseSucceeded),
			live("whdl-other-endpoint", "whep-b", time.Hour, switchboardv1alpha1.WebhookDeliveryPhaseRetrying),
			live("whdl-too-old", "whep-a", 31*24*time.Hour, switchboardv1alpha1.WebhookDeliveryPhaseRetrying),
			live(send.DeliveryName(ev.String(), "whep-a", ""), "whep-a", time.Minute, ""),
		},
		[]store.FinishedDelivery{
			hist("whdl-finishing", 3*time.Hour, send.DeliverySucceeded), // the resource wins
			hist("whdl-failed", 90*time.Minute, send.DeliveryFailed),
			hist("whdl-cancelled", 4*time.Hour, send.DeliveryCancelled),
		}, since)
	want := []struct {
		name   string
		status send.DeliveryStatus
		next   bool
	}{
		{send.DeliveryName(queuedID.String(), "whep-a", ""), send.DeliveryPending, false},
		{send.DeliveryName(ev.String(), "whep-a", "resend-"+resendID.String()), send.DeliveryPending, false},
		{send.DeliveryName(ev.String(), "whep-a", ""), send.DeliveryPending, true},
		{"whdl-failed", send.DeliveryFailed, false},
		{"whdl-retrying", send.DeliveryRetrying, true},
		{"whdl-finishing", send.DeliverySucceeded, true},
		{"whdl-cancelled", send.DeliveryCancelled, false},
	}
	if len(got) != len(want) {
		t.Fatalf("merged %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Status != w.status || (g.NextAttemptAt != nil) != w.next || (i > 0 && g.EventID != ev.String()) ||
			g.CreatedAt.Location() != time.UTC {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestDeliveryFilter(t *testing.T) {
	log := []Delivery{
		{Name: "a", Event: "call.ended", Status: send.DeliverySucceeded},
		{Name: "b", Event: "test", Status: send.DeliveryFailed},
		{Name: "c", Event: "call.ended", Status: send.DeliveryFailed},
		{Name: "d", Event: "voicemail.received", Status: send.DeliveryPending},
	}
	for _, tc := range []struct {
		filter DeliveryFilter
		want   string
	}{
		{DeliveryFilter{}, "abcd"},
		{DeliveryFilter{Event: "call.ended"}, "ac"},
		{DeliveryFilter{Status: "failed"}, "bc"},
		{DeliveryFilter{Event: "call.ended", Status: "failed"}, "c"},
		{DeliveryFilter{Event: "transcript.ready"}, ""},
		{DeliveryFilter{Event: "test", Status: "succeeded"}, ""},
	} {
		got := ""
		for _, d := range tc.filter.Apply(log) {
			got += d.Name
		}
		if got != tc.want {
			t.Errorf("%+v keeps %q, want %q", tc.filter, got, tc.want)
		}
	}
}
