package webhooks

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Labels on WebhookDeliveries (besides the account label).
const (
	LabelEndpoint = "switchboard.dev/endpoint"
	LabelEventID  = "switchboard.dev/event-id"
	// LabelSigningSecret marks Secrets that hold a signing secret.
	LabelSigningSecret = "switchboard.dev/webhook-signing-secret"
)

// DeliveryName is the resource name of the delivery of an event to an endpoint. It is a
// hash of both (plus salt for resends), so creating it again is idempotent.
func DeliveryName(eventID, endpointName, salt string) string {
	h := sha256.Sum256([]byte(eventID + "/" + endpointName + "/" + salt))
	return "whdl-" + hex.EncodeToString(h[:12])
}

// NewDelivery is the WebhookDelivery of an event to ep, owned by ep (so deleting the
// endpoint removes it). resendOf names the delivery a resend repeats ("" otherwise).
func NewDelivery(ep *switchboardv1alpha1.WebhookEndpoint, eventID, eventType, resendOf, salt string) *switchboardv1alpha1.WebhookDelivery {
	return &switchboardv1alpha1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{
			Name:      DeliveryName(eventID, ep.Name, salt),
			Namespace: ep.Namespace,
			Labels: map[string]string{
				switchboardv1alpha1.AccountLabel: labelValue(ep.Spec.AccountID),
				LabelEndpoint:                    ep.Name,
				LabelEventID:                     eventID,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: switchboardv1alpha1.GroupVersion.String(), Kind: "WebhookEndpoint", Name: ep.Name, UID: ep.UID,
			}},
		},
		Spec: switchboardv1alpha1.WebhookDeliverySpec{
			AccountID: ep.Spec.AccountID, EndpointName: ep.Name, EventID: eventID,
			EventType: switchboardv1alpha1.WebhookEventType(eventType), ResendOf: resendOf,
		},
	}
}

// labelValue keeps a label value within 63 characters.
func labelValue(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// Subscribed reports whether ep receives events of type t.
func Subscribed(ep *switchboardv1alpha1.WebhookEndpoint, t string) bool {
	for _, e := range ep.Spec.Events {
		if string(e) == t {
			return true
		}
	}
	return false
}

// AnnotationSwitchedOff is set (to the time, RFC 3339) together with spec.paused, in one
// write, when the controller switches an endpoint off; both facts are then always seen
// together, even through a stale cache. Setting spec.paused back to false switches the
// endpoint on; the controller then clears its failure record and removes the annotation.
const AnnotationSwitchedOff = "switchboard.dev/switched-off-at"

// AnnotationFirstAttempt marks a delivery whose first attempt the engine made before it
// created the resource (RFC 3339 time of the attempt): until the status records it, the
// controller waits for the first retry rather than attempt again.
const AnnotationFirstAttempt = "switchboard.dev/first-attempt-at"

// Deliverable reports whether deliveries are sent to ep now: not paused (switching off
// pauses too), not being deleted.
func Deliverable(ep *switchboardv1alpha1.WebhookEndpoint) bool {
	return ep.DeletionTimestamp == nil && !ep.Spec.Paused
}

// SwitchedOff reports whether ep is switched off (paused by the controller for failing).
func SwitchedOff(ep *switchboardv1alpha1.WebhookEndpoint) bool {
	return ep.Spec.Paused && ep.Annotations[AnnotationSwitchedOff] != ""
}

// SecretName is the Secret a generated signing secret lives in.
func SecretName(endpointName string) string { return endpointName + "-signing" }

// NewSigningSecret is the Secret holding an endpoint's signing secret, owned (controller
// reference) by the endpoint so that removing the endpoint removes it.
func NewSigningSecret(ep *switchboardv1alpha1.WebhookEndpoint, name, value string) *corev1.Secret {
	t := true
	labels := map[string]string{LabelSigningSecret: "true"}
	if ep.Spec.AccountID != "" {
		labels[switchboardv1alpha1.AccountLabel] = labelValue(ep.Spec.AccountID)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ep.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: switchboardv1alpha1.GroupVersion.String(), Kind: "WebhookEndpoint",
				Name: ep.Name, UID: ep.UID, Controller: &t, BlockOwnerDeletion: &t}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{switchboardv1alpha1.SigningSecretKey: []byte(value)},
	}
}
