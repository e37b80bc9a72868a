package engine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// SetDeliveryConditions sets Ready and Delivered from the phase.
func SetDeliveryConditions(d *switchboardv1alpha1.WebhookDelivery, reason, msg string) {
	status := metav1.ConditionFalse
	if d.Status.Phase == switchboardv1alpha1.WebhookDeliveryPhaseSucceeded {
		status = metav1.ConditionTrue
	}
	for _, t := range []string{switchboardv1alpha1.ConditionReady, switchboardv1alpha1.ConditionDelivered} {
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: d.Generation})
	}
}

// MaxErrorLen bounds a delivery's recorded error.
const MaxErrorLen = 1024

// Truncate cuts s to n bytes.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SigningSecret reads the endpoint's current secret ("" when not there yet): from the cache,
// and past it before concluding it is missing.
func SigningSecret(ctx context.Context, cached, api client.Reader, ep *switchboardv1alpha1.WebhookEndpoint) (string, error) {
	sec := &corev1.Secret{}
	key := types.NamespacedName{Namespace: ep.Namespace, Name: send.SigningSecretName(ep)}
	err := cached.Get(ctx, key, sec)
	if apierrors.IsNotFound(err) {
		err = api.Get(ctx, key, sec)
	}
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(sec.Data[switchboardv1alpha1.SigningSecretKey]), nil
}
