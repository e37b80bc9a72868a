package endpoints

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// RevealSecret is the endpoint's current signing secret, for an owner of its account (the
// portal's; the API shows a secret only when it is made). The reveal is recorded first (who
// and when, store.Store.RecordSecretReveal): a secret whose showing could not be recorded is
// not shown. ErrEndpointNotFound for another account's endpoint; a ConflictError when the
// endpoint has no secret yet.
func (s *Endpoints) RevealSecret(ctx context.Context, actor store.User, account, id string) (string, error) {
	if !store.MayRevealSecrets(actor) {
		return "", fmt.Errorf("%w: only an owner can see a signing secret again", store.ErrNotAllowed)
	}
	ep, err := s.Get(ctx, account, id)
	if err != nil {
		return "", err
	}
	sec := &corev1.Secret{}
	err = s.Reader.Get(ctx, types.NamespacedName{Namespace: ep.Namespace, Name: send.SigningSecretName(ep)}, sec)
	if apierrors.IsNotFound(err) || (err == nil && len(sec.Data[switchboardv1alpha1.SigningSecretKey]) == 0) {
		return "", &ConflictError{Message: "The endpoint has no signing secret yet. Try again in a moment."}
	}
	if err != nil {
		return "", err
	}
	if err := s.Store.RecordSecretReveal(ctx, actor, ep.Name, s.Clock.Now()); err != nil {
		return "", err
	}
	return string(sec.Data[switchboardv1alpha1.SigningSecretKey]), nil
}
