package metrics

import (
	"testing"
	"time"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestIngestResult(t *testing.T) {
	for status, want := range map[int]string{201: "stored", 200: "duplicate", 404: "unknown_number", 400: "rejected",
		413: "rejected", 422: "rejected", 500: "error", 503: "error", 302: "other"} {
		if got := IngestResult(status); got != want {
			t.Errorf("IngestResult(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestDeliveryOutcome(t *testing.T) {
	for phase, want := range map[switchboardv1alpha1.WebhookDeliveryPhase]string{switchboardv1alpha1.WebhookDeliveryPhaseSucceeded: "succeeded",
		switchboardv1alpha1.WebhookDeliveryPhaseFailed: "failed", switchboardv1alpha1.WebhookDeliveryPhaseCancelled: "cancelled"} {
		if got := deliveryOutcome(phase); got != want {
			t.Errorf("deliveryOutcome(%s) = %q, want %q", phase, got, want)
		}
	}
}

func TestOldestAge(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		b    OutboxBacklog
		want time.Duration
	}{
		{"empty outbox", OutboxBacklog{}, 0},
		{"one waiting for 90 s", OutboxBacklog{Waiting: 1, Oldest: now.Add(-90 * time.Second)}, 90 * time.Second},
		{"clock behind the database", OutboxBacklog{Waiting: 3, Oldest: now.Add(time.Second)}, 0},
	}
	for _, c := range cases {
		if got := oldestAge(c.b, now); got != c.want {
			t.Errorf("%s: oldestAge = %v, want %v", c.name, got, c.want)
		}
	}
}
