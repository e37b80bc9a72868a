package engine

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
)

// OrphanEndpoints logs, once per leader term, the webhook endpoints whose namespace names an
// account PostgreSQL does not hold: what restoring an etcd backup newer than the database
// leaves behind. Such an endpoint is inert (no event names its account, no key reaches it);
// the line says so and what to do, so the operator need not find it by its silence.
type OrphanEndpoints struct {
	Reader client.Reader
	Store  *store.Store
}

// Start runs the check once and returns; a failure is logged, never fatal (the service
// works without the check).
func (o *OrphanEndpoints) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("orphan-endpoints")
	var list switchboardv1alpha1.WebhookEndpointList
	if err := o.Reader.List(ctx, &list); err != nil {
		log.Error(err, "list webhook endpoints to check their accounts")
		return nil
	}
	byAccount := map[string][]string{}
	for _, ep := range list.Items {
		if account, ok := tenancy.AccountOf(ep.Namespace); ok {
			byAccount[account] = append(byAccount[account], ep.Name)
		}
	}
	if len(byAccount) == 0 {
		return nil
	}
	ids := make([]string, 0, len(byAccount))
	for id := range byAccount {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	missing, err := o.Store.MissingAccounts(ctx, ids)
	if err != nil {
		log.Error(err, "check the accounts of webhook endpoints")
		return nil
	}
	for _, account := range missing {
		log.Info("webhook endpoints name an account PostgreSQL does not hold (etcd restored from a backup newer than the database?): "+
			"they receive no events and no key reaches them; restore the account or delete the namespace",
			"account", account, "namespace", tenancy.Namespace(account), "endpoints", byAccount[account])
	}
	return nil
}
