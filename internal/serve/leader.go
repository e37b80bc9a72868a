package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ElectionOptions configure leader election of the leader-only parts (controllers, webhook
// dispatcher, sweepers, pruner). The API runs on every replica regardless.
type ElectionOptions struct {
	// Namespace holds the Lease. Empty: the pod's own namespace (an error outside a pod).
	Namespace string
	// ID is the Lease's name; replicas with the same Namespace and ID elect one leader.
	ID string
	// LeaseDuration is how long a lease stays valid after its last renewal: the worst-case
	// takeover time after a leader dies without releasing it.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it gives up leading
	// (must be under LeaseDuration): the kube-apiserver outage a leader rides out.
	RenewDeadline time.Duration
	// RetryPeriod is how often candidates try to acquire, and the leader to renew.
	RetryPeriod time.Duration
}

// Defaults of the lease: client-go's and controller-runtime's (15 s / 10 s / 2 s).
const (
	DefaultLeaderElectionID = "switchboard-controller-manager.switchboard.dev"
	DefaultLeaseDuration    = 15 * time.Second
	DefaultRenewDeadline    = 10 * time.Second
	DefaultRetryPeriod      = 2 * time.Second
)

// inClusterNamespaceFile is where a pod's service account namespace is mounted.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// resolve fills defaults and finds the Lease's namespace.
func (e ElectionOptions) resolve() (ElectionOptions, error) {
	if e.ID == "" {
		e.ID = DefaultLeaderElectionID
	}
	if e.LeaseDuration <= 0 {
		e.LeaseDuration = DefaultLeaseDuration
	}
	if e.RenewDeadline <= 0 {
		e.RenewDeadline = DefaultRenewDeadline
	}
	if e.RetryPeriod <= 0 {
		e.RetryPeriod = DefaultRetryPeriod
	}
	if e.RenewDeadline >= e.LeaseDuration || e.RetryPeriod >= e.RenewDeadline {
		return e, fmt.Errorf("leader election needs --leader-election-retry-period < --leader-election-renew-deadline < --leader-election-lease-duration (got %s, %s, %s)",
			e.RetryPeriod, e.RenewDeadline, e.LeaseDuration)
	}
	if e.Namespace == "" {
		b, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil || len(b) == 0 {
			return e, errors.New("leader election needs a namespace for its Lease: set --leader-election-namespace (outside a pod there is no namespace of its own), or --leader-elect=false for a single replica")
		}
		e.Namespace = string(b)
	}
	return e, nil
}

// leaderTerms runs the leader-only parts on every replica as a candidate, in terms: each
// term is a fresh controller-runtime manager (a manager cannot be started twice) that
// elects, runs the leader-only runnables while it holds the Lease, and returns when it
// loses it. Losing the Lease (kube-apiserver unreachable for longer than RenewDeadline)
// then stops only these parts: the APIs run in the process's other manager and keep
// serving, and the next term re-enters the election. Without election there is one term.
type leaderTerms struct {
	election bool
	opts     ElectionOptions
	// newManager makes a term's manager from the base options and registers the leader-only
	// parts on it.
	newManager func(ctrl.Options) (ctrl.Manager, error)
	base       ctrl.Options
	clock      clock.WithTicker
	log        logr.Logger
	// lock is the Lease lock of every term, with one identity for the life of the process
	// (newLeaseLock): a term that lost the Lease because kube-apiserver stopped answering
	// finds it still held by its own identity when kube-apiserver answers again and renews
	// it at once, instead of waiting a lease duration as a stranger would.
	lock resourcelock.Interface
	// first is the first term's manager, made before the process serves so that a
	// configuration error stops `serve` at once.
	first ctrl.Manager
}

func (l *leaderTerms) NeedLeaderElection() bool { return false }

// termOptions are a term manager's options: the base ones with the Lease settings.
func (l *leaderTerms) termOptions() ctrl.Options {
	o := l.base
	// The process's always-on manager serves metrics and probes; controllers of every term
	// report to the same registry under the same names.
	o.Metrics = metricsserver.Options{BindAddress: "0"}
	o.HealthProbeBindAddress = ""
	// Each term registers the same controllers again on its new manager, and controller
	// names are unique per process unless this is set (the one place it is).
	o.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	o.LeaderElection = l.election
	if l.election {
		o.LeaderElectionNamespace = l.opts.Namespace
		o.LeaderElectionID = l.opts.ID
		o.LeaderElectionResourceLockInterface = l.lock
		o.LeaseDuration = ptr.To(l.opts.LeaseDuration)
		o.RenewDeadline = ptr.To(l.opts.RenewDeadline)
		o.RetryPeriod = ptr.To(l.opts.RetryPeriod)
		// A clean shutdown hands the Lease over at once instead of leaving it to expire.
		o.LeaderElectionReleaseOnCancel = true
	}
	return o
}

func (l *leaderTerms) Start(ctx context.Context) error {
	for term := 1; ; term++ {
		mgr := l.first
		l.first = nil
		if mgr == nil {
			var err error
			if mgr, err = l.newManager(l.termOptions()); err != nil {
				// Only the first term's manager, made before the process serves, may stop it
				// (a configuration error). A later one fails when kube-apiserver does not
				// answer its discovery (a freeze past the renew deadline): try again.
				l.log.Error(err, "cannot make the leader-only parts' manager; the API keeps serving; trying again", "term", term)
				select {
				case <-ctx.Done():
					return nil
				case <-l.clock.After(l.opts.RetryPeriod):
				}
				continue
			}
		}
		err := mgr.Start(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !l.election {
			return err
		}
		l.log.Error(err, "leader-only parts stopped (controllers, webhook dispatcher, sweepers); the API keeps serving; re-entering the leader election", "term", term)
		select {
		case <-ctx.Done():
			return nil
		case <-l.clock.After(l.opts.RetryPeriod):
		}
	}
}

// newLeaseLock is the Lease lock of the leader election, made once per process so that its
// identity (host name and a random suffix, as controller-runtime makes one) stays the same
// across leader terms. Its clients time out at half the renew deadline, at least a second,
// as controller-runtime's do, so one hung request cannot cost the Lease.
func newLeaseLock(cfg *rest.Config, e ElectionOptions) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = max(e.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, e.Namespace, e.ID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: host + "_" + uuid.NewString()})
}
