package cli

import (
	"github.com/spf13/pflag"

	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/serve"
)

// leaderElectionFlags binds the Lease settings and the kube-apiserver call deadline.
func leaderElectionFlags(f *pflag.FlagSet, o *serve.Options) {
	f.StringVar(&o.Election.Namespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace; required outside a pod)")
	f.StringVar(&o.Election.ID, "leader-election-id", serve.DefaultLeaderElectionID, "name of the leader election Lease; replicas with the same namespace and name elect one leader")
	f.DurationVar(&o.Election.LeaseDuration, "leader-election-lease-duration", serve.DefaultLeaseDuration, "how long a Lease stays valid unrenewed: the longest takeover after a leader dies without releasing it")
	f.DurationVar(&o.Election.RenewDeadline, "leader-election-renew-deadline", serve.DefaultRenewDeadline, "how long the leader retries renewing before it stops its controllers: the kube-apiserver outage it rides out (under the lease duration)")
	f.DurationVar(&o.Election.RetryPeriod, "leader-election-retry-period", serve.DefaultRetryPeriod, "how often candidates try to acquire the Lease and the leader renews it")
	f.DurationVar(&o.KubeAPITimeout, "kube-api-timeout", kubeapi.DefaultTimeout, "deadline of each call the API makes to kube-apiserver; past it the request answers 503 with Retry-After")
}
