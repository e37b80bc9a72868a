package send

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

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

// AnnotationSwitchedOff marks an endpoint switched off by an earlier release, which paused it
// (spec.paused) and set this annotation (to the time, RFC 3339) in one write. It is read, never
// written: a switch-off is now status only (SwitchedOff). The API's switch-on removes it.
const AnnotationSwitchedOff = "switchboard.dev/switched-off-at"

// AnnotationFirstAttempt marks a delivery whose first attempt the engine made before it
// created the resource (RFC 3339 time of the attempt): until the status records it, the
// controller waits for the first retry rather than attempt again.
const AnnotationFirstAttempt = "switchboard.dev/first-attempt-at"

// Deliverable reports whether deliveries are sent to ep now: not paused, not switched off,
// not being deleted.
func Deliverable(ep *switchboardv1alpha1.WebhookEndpoint) bool {
	return ep.DeletionTimestamp == nil && !ep.Spec.Paused && !SwitchedOff(ep)
}

// SwitchedOff reports whether a switch-off for failing is in force: the controller recorded
// one (status.switchedOffAt) and the owner has not set the endpoint active since
// (spec.activatedAt), or an earlier release switched it off (AnnotationSwitchedOff with
// spec.paused).
func SwitchedOff(ep *switchboardv1alpha1.WebhookEndpoint) bool {
	if ep.Spec.Paused && ep.Annotations[AnnotationSwitchedOff] != "" {
		return true
	}
	off := ep.Status.SwitchedOffAt
	return off != nil && (ep.Spec.ActivatedAt == nil || ep.Spec.ActivatedAt.Before(off))
}

// SwitchOn records the owner's wish that a switched-off endpoint deliver again: spec.activatedAt
// at now, or at the switch-off if a clock behind the controller's says earlier, so the wish is
// never older than the switch-off it ends. It also unpauses an endpoint an earlier release
// switched off.
func SwitchOn(ep *switchboardv1alpha1.WebhookEndpoint, now time.Time) {
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	if off := ep.Status.SwitchedOffAt; off != nil && at.Before(off) {
		at = *off.DeepCopy()
	}
	ep.Spec.ActivatedAt = &at
	if _, ok := ep.Annotations[AnnotationSwitchedOff]; ok {
		delete(ep.Annotations, AnnotationSwitchedOff)
		ep.Spec.Paused = false
	}
}

// SwitchOffTime is when the controller records a switch-off decided at now: now, or just after
// the owner's last switch-on if that is not before now (a clock ahead of the controller's),
// so the switch-off is never hidden by an older wish.
func SwitchOffTime(ep *switchboardv1alpha1.WebhookEndpoint, now time.Time) time.Time {
	off := now.UTC().Truncate(time.Second)
	if a := ep.Spec.ActivatedAt; a != nil && !a.Time.Before(off) {
		off = a.Add(time.Second)
	}
	return off
}

// SigningSecretName is the Secret that holds the endpoint's signing secret: the one
// spec.signingSecretRef names, or the generated "<name>-signing".
func SigningSecretName(ep *switchboardv1alpha1.WebhookEndpoint) string {
	if ep.Spec.SigningSecretRef != nil {
		return ep.Spec.SigningSecretRef.Name
	}
	return SecretName(ep.Name)
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
