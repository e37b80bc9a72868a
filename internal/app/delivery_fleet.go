package app

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/fleet"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Defaults of the webhook engine's own bounds.
const (
	// endpointOutageRecheck is how often kube-apiserver is probed while endpoints are read
	// from the cache; endpointLiveTimeout how long a live read of them may take before
	// kube-apiserver counts as down (short: the claims wait on it; a slow answer only means
	// one second of reads from the cache, which lacks at most an endpoint made that moment).
	endpointOutageRecheck = time.Second
	endpointLiveTimeout   = 250 * time.Millisecond
)

func webhookSender(o Options) (*send.Sender, error) {
	w := o.Webhooks
	var pool *x509.CertPool
	if w.CAFile != "" {
		pem, err := os.ReadFile(w.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the webhook CA file: %w", err)
		}
		pool, err = x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in %s", w.CAFile)
		}
	}
	if w.AllowPrivateTargets {
		o.Log.Info("webhook endpoints may be on private addresses (--webhook-allow-private-targets): never use this in production")
	}
	return send.NewSender(send.SenderConfig{Timeout: w.Timeout, AllowPrivateTargets: w.AllowPrivateTargets, RootCAs: pool,
		MaxConnsPerHost: max(w.PerEndpoint, engine.DefaultPerEndpoint) * 2}), nil
}

// newDeliveryEngine builds webhook delivery's engine once per process, on the always-on
// manager mgr: the first attempts from the outbox run on every replica, the per-endpoint
// bound split among them (internal/webhook/fleet), and endpoints and signing secrets are read through
// watched caches so that deliveries to existing endpoints go on while kube-apiserver is
// down. It registers on mgr the fleet membership and the outbox dispatcher. Each leader
// term's WebhookDelivery reconciler (setupWebhooks) is handed the same engine, so the bound
// and the endpoints' health cover its retries too. docs/delivery-fleet.md.
func newDeliveryEngine(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, st *store.Store, o Options) (*engine.Engine, error) {
	sender, err := webhookSender(o)
	if err != nil {
		return nil, err
	}
	w := o.Webhooks
	perEndpoint := w.PerEndpoint
	if perEndpoint <= 0 {
		perEndpoint = engine.DefaultPerEndpoint
	}
	eng, err := engine.NewEngine(ctx, mgr, engine.EngineOptions{Sender: sender, Store: st, Clock: o.Clock,
		PerEndpoint: perEndpoint, FirstAttemptsPerEndpoint: w.FirstAttemptsPerEndpoint, FirstAttempts: w.FirstAttempts,
		StopGrace: w.StopGrace, Log: o.Log})
	if err != nil {
		return nil, err
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = send.DefaultTimeout
	}
	// The membership outlives the dispatcher's attempts when the process stops (Drained).
	drained := make(chan struct{})
	membership := &fleet.Membership{Store: st, Clock: o.Clock, AttemptTimeout: timeout, Drained: drained, Log: o.Log.WithName("delivery-fleet")}
	eng.Slots.SetShare(func(ep types.NamespacedName) int { return membership.Share(ep.String(), perEndpoint) })
	// A rate limit is split as the slots are: the shares add up to perEndpoint, or to one
	// each when the fleet is larger (fleet.Capped).
	eng.Throttle.SetFraction(func(ep types.NamespacedName) float64 {
		return float64(membership.Share(ep.String(), perEndpoint)) / float64(max(perEndpoint, len(membership.Members())))
	})
	if err := mgr.Add(&fleetMembership{m: membership, slots: eng.Slots, clock: o.Clock, perEndpoint: perEndpoint, log: o.Log.WithName("delivery-fleet")}); err != nil {
		return nil, err
	}

	// Watched caches of endpoints and their signing secrets on the always-on manager, made
	// before it starts (the engine's backlog registers the endpoints' informer too).
	for _, obj := range []client.Object{&switchboardv1alpha1.WebhookEndpoint{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	ping, err := kubeapi.NewPing(cfg, endpointLiveTimeout)
	if err != nil {
		return nil, err
	}
	live := &kubeapi.OutageReader{Live: mgr.GetAPIReader(), Cache: mgr.GetCache(), Ping: ping,
		LiveTimeout: endpointLiveTimeout, Recheck: endpointOutageRecheck}
	endpoints := &engine.WatchedEndpoints{Cache: mgr.GetCache(), Live: live}
	if err := endpoints.Watch(ctx); err != nil {
		return nil, err
	}

	dispatcher := &engine.Dispatcher{Client: mgr.GetClient(), Reader: live, Endpoints: endpoints, Store: st, Clock: o.Clock,
		Engine: eng, MaxPending: w.MaxPendingDeliveries, MaxLive: w.MaxLiveDeliveries,
		MaxLivePerEndpoint: w.MaxLiveDeliveriesPerEndpoint, Log: o.Log.WithName("webhook-dispatcher")}
	if err := mgr.Add(&fleetGate{run: dispatcher.Start, membership: membership, drained: drained, clock: o.Clock,
		log: o.Log.WithName("webhook-dispatcher")}); err != nil {
		return nil, err
	}
	return eng, nil
}

// fleetMembership runs the membership's heartbeats and, after each, lets waiting attempts
// try again in case the shares grew (a replica left).
type fleetMembership struct {
	m           *fleet.Membership
	slots       *engine.Slots
	clock       clock.WithTicker
	perEndpoint int
	log         logr.Logger
}

func (f *fleetMembership) NeedLeaderElection() bool { return false }

func (f *fleetMembership) Start(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- f.m.Start(ctx) }()
	ticker := f.clock.NewTicker(fleet.DefaultHeartbeatInterval)
	defer ticker.Stop()
	members := 0
	for {
		select {
		case err := <-done:
			return err
		case <-ticker.C():
			live := f.m.Members()
			if len(live) < members {
				f.slots.Grown()
			}
			if fleet.Capped(live, f.perEndpoint) && len(live) != members {
				f.log.Info("WARNING: more replicas than --webhook-per-endpoint: each makes one attempt at a time per endpoint, so an endpoint may get as many at once as there are replicas",
					"replicas", len(live), "per-endpoint", f.perEndpoint)
			}
			members = len(live)
		}
	}
}

// fleetGate runs the dispatcher while this replica may claim (fleet.Standing): not before
// the others have seen it join, and not once its heartbeats have failed for the member TTL
// (PostgreSQL lost), when the others take its slots; its claims are then taken again by
// the others after their lease.
type fleetGate struct {
	run        func(context.Context) error
	membership *fleet.Membership
	// drained is closed when Start returns: the dispatcher's attempts are over.
	drained chan<- struct{}
	clock   clock.WithTicker
	log     logr.Logger
}

func (g *fleetGate) NeedLeaderElection() bool { return false }

// fleetGateCheck is how often the gate looks at the replica's standing.
const fleetGateCheck = 200 * time.Millisecond

func (g *fleetGate) Start(ctx context.Context) error {
	if g.drained != nil {
		defer close(g.drained)
	}
	ticker := g.clock.NewTicker(fleetGateCheck)
	defer ticker.Stop()
	var (
		stop    context.CancelCauseFunc
		stopped chan error
		reason  string
	)
	for {
		standing := g.membership.Standing()
		switch {
		case standing.Claim && stop == nil:
			g.log.Info("claiming outbox events")
			var runCtx context.Context
			runCtx, stop = context.WithCancelCause(ctx)
			stopped = make(chan error, 1)
			go func() { stopped <- g.run(runCtx) }()
		case !standing.Claim && stop != nil:
			g.log.Info("not claiming outbox events", "reason", standing.Reason)
			// The others take this replica's slots now: its attempts in flight end at once.
			stop(engine.ErrStopAttempts)
			if err := <-stopped; err != nil {
				return err
			}
			stop, stopped = nil, nil
		case !standing.Claim && standing.Reason != reason:
			g.log.Info("waiting to claim outbox events", "reason", standing.Reason)
		}
		reason = standing.Reason
		select {
		case <-ctx.Done():
			// The process is stopping: the dispatcher claims no more, and its attempts in
			// flight finish within the stop grace (engine.DefaultStopGrace).
			if stop != nil {
				stop(nil)
				return <-stopped
			}
			return nil
		case err := <-stopped:
			if stop != nil {
				stop(nil)
			}
			return err
		case <-ticker.C():
		}
	}
}
