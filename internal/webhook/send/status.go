package send

import switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"

// DeliveryStatus is a delivery's status as the API and the history show it.
type DeliveryStatus string

// The delivery statuses of the spec. A live delivery is pending or retrying; the history
// holds succeeded, failed and cancelled ones.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryRetrying  DeliveryStatus = "retrying"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliveryCancelled DeliveryStatus = "cancelled"
)

// InProgress reports whether a delivery with this status may still be attempted.
func (s DeliveryStatus) InProgress() bool { return s == DeliveryPending || s == DeliveryRetrying }

// Resendable reports whether a delivery with this status may be resent (spec: failed or
// cancelled).
func (s DeliveryStatus) Resendable() bool { return s == DeliveryFailed || s == DeliveryCancelled }

// APIStatus is the status of a delivery resource in phase p.
func APIStatus(p switchboardv1alpha1.WebhookDeliveryPhase) DeliveryStatus {
	switch p {
	case switchboardv1alpha1.WebhookDeliveryPhaseRetrying:
		return DeliveryRetrying
	case switchboardv1alpha1.WebhookDeliveryPhaseSucceeded:
		return DeliverySucceeded
	case switchboardv1alpha1.WebhookDeliveryPhaseFailed:
		return DeliveryFailed
	case switchboardv1alpha1.WebhookDeliveryPhaseCancelled:
		return DeliveryCancelled
	default:
		return DeliveryPending
	}
}
