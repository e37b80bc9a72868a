package engine

import (
	"time"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Action is what a delivery needs now.
type Action int

const (
	// Attempt: send the attempt that is due.
	Attempt Action = iota + 1
	// Wait until Decision.Until (the next retry).
	Wait
	// Cancel the delivery (resendable), for Decision.Reason and Message.
	Cancel
	// Finish: the delivery already has its final phase (written before the manager stopped):
	// record it in the history and remove its resource.
	Finish
)

func (a Action) String() string {
	switch a {
	case Attempt:
		return "attempt"
	case Wait:
		return "wait"
	case Cancel:
		return "cancel"
	case Finish:
		return "finish"
	}
	return "unknown"
}

// Decision is Plan's answer.
type Decision struct {
	Action Action
	// Until is when to look again (Wait).
	Until time.Time
	// Reason and Message go on the delivery's conditions (Cancel).
	Reason, Message string
}

// Plan decides what delivery d needs at now, given its endpoint ep (nil when the endpoint
// does not exist): a finished delivery is finished; a delivery whose endpoint is gone,
// being deleted, or a new incarnation under the same name is cancelled, and so is one whose
// endpoint is paused or switched off; a retry not yet due waits; anything else is attempted.
func Plan(d *switchboardv1alpha1.WebhookDelivery, ep *switchboardv1alpha1.WebhookEndpoint, now time.Time) Decision {
	switch d.Status.Phase {
	case switchboardv1alpha1.WebhookDeliveryPhaseSucceeded, switchboardv1alpha1.WebhookDeliveryPhaseFailed, switchboardv1alpha1.WebhookDeliveryPhaseCancelled:
		return Decision{Action: Finish}
	}
	if ep == nil || ep.DeletionTimestamp != nil || (len(ep.UID) > 0 && !OwnedBy(d, ep)) {
		return Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotFound, Message: "The endpoint was removed"}
	}
	if !send.Deliverable(ep) {
		return Decision{Action: Cancel, Reason: switchboardv1alpha1.ReasonEndpointNotActive, Message: "The endpoint is paused or switched off; resend it once active"}
	}
	if next := d.Status.NextAttemptAt; next != nil && now.Before(next.Time) {
		return Decision{Action: Wait, Until: next.Time}
	}
	if d.Status.Attempts == 0 {
		// The engine's first attempt, not yet in the status (written just after creation):
		// the first retry is due a schedule step after it.
		if at, err := time.Parse(time.RFC3339Nano, d.Annotations[send.AnnotationFirstAttempt]); err == nil {
			if next, _ := send.NextAttempt(1, at); now.Before(next) {
				return Decision{Action: Wait, Until: next}
			}
		}
	}
	return Decision{Action: Attempt}
}

// OwnedBy reports whether d belongs to this incarnation of the endpoint (an endpoint
// removed and created again under the same name does not inherit old deliveries).
func OwnedBy(d *switchboardv1alpha1.WebhookDelivery, ep *switchboardv1alpha1.WebhookEndpoint) bool {
	for _, o := range d.OwnerReferences {
		if o.Kind == "WebhookEndpoint" && o.Name == ep.Name {
			return o.UID == ep.UID
		}
	}
	return true // no owner reference (made by hand): the endpoint name decides
}
