package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// gaugeTimeout bounds each source's read during a scrape: a slow database must not hold
// Prometheus's scrape (default timeout 10 s) or pile up queries.
const gaugeTimeout = 2 * time.Second

// OutboxBacklog is what the outbox holds undispatched.
type OutboxBacklog struct {
	Waiting int64
	// Oldest is the creation time of the oldest waiting event (zero when none waits).
	Oldest time.Time
	// Deferred counts the deliveries waiting in PostgreSQL for room under the live caps.
	Deferred int64
}

// OutboxReader reads the outbox backlog (store.Store implements it).
type OutboxReader interface {
	OutboxBacklog(ctx context.Context) (OutboxBacklog, error)
}

// OutboxReaderFunc adapts a function to OutboxReader.
type OutboxReaderFunc func(ctx context.Context) (OutboxBacklog, error)

// OutboxBacklog calls f.
func (f OutboxReaderFunc) OutboxBacklog(ctx context.Context) (OutboxBacklog, error) { return f(ctx) }

// WebhookResources counts the webhook resources this replica's informer cache holds.
type WebhookResources interface {
	// LiveDeliveries is the number of WebhookDeliveries not yet finished.
	LiveDeliveries(ctx context.Context) (int, error)
	// EndpointsByPhase counts WebhookEndpoints by status phase.
	EndpointsByPhase(ctx context.Context) (map[switchboardv1alpha1.WebhookEndpointPhase]int, error)
}

// GaugeSources feed the gauges read at scrape time; nil sources leave their gauges out.
type GaugeSources struct {
	Outbox   OutboxReader
	Webhooks WebhookResources
	Clock    clock.PassiveClock
}

var (
	outboxWaitingDesc = prometheus.NewDesc("switchboard_webhook_outbox_events_waiting",
		"Events in the outbox not yet handed to delivery (read from PostgreSQL at scrape).", nil, nil)
	outboxOldestDesc = prometheus.NewDesc("switchboard_webhook_outbox_oldest_event_age_seconds",
		"Age of the oldest event waiting in the outbox; 0 when none waits.", nil, nil)
	liveDeliveriesDesc = prometheus.NewDesc("switchboard_webhook_deliveries_live",
		"WebhookDeliveries not yet finished (waiting for or between attempts), from the informer cache.", nil, nil)
	deferredDesc = prometheus.NewDesc("switchboard_webhook_deliveries_deferred",
		"Webhook deliveries waiting in PostgreSQL because the live WebhookDeliveries were at a cap (read from PostgreSQL at scrape).", nil, nil)
	endpointsDesc = prometheus.NewDesc("switchboard_webhook_endpoints",
		"WebhookEndpoints by phase (Active, Paused, SwitchedOff), from the informer cache.", []string{"phase"}, nil)
)

// endpointPhases are always reported, 0 included, so alerts and graphs see every phase.
var endpointPhases = []switchboardv1alpha1.WebhookEndpointPhase{switchboardv1alpha1.WebhookEndpointPhaseActive, switchboardv1alpha1.WebhookEndpointPhasePaused, switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff}

// gaugeCollector reads the gauges from their sources on each scrape.
type gaugeCollector struct {
	mu      sync.Mutex
	sources GaugeSources
}

var gauges = &gaugeCollector{}

// SetGaugeSources points the scrape-time gauges at the running service's sources (one
// service per process); the returned func detaches them when the service stops.
func SetGaugeSources(s GaugeSources) (detach func()) {
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	gauges.mu.Lock()
	gauges.sources = s
	gauges.mu.Unlock()
	return func() {
		gauges.mu.Lock()
		gauges.sources = GaugeSources{}
		gauges.mu.Unlock()
	}
}

func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxWaitingDesc
	ch <- outboxOldestDesc
	ch <- deferredDesc
	ch <- liveDeliveriesDesc
	ch <- endpointsDesc
}

func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	s := g.sources
	g.mu.Unlock()
	if s.Outbox != nil {
		ctx, cancel := context.WithTimeout(context.Background(), gaugeTimeout)
		b, err := s.Outbox.OutboxBacklog(ctx)
		cancel()
		if err != nil {
			collectErrors.WithLabelValues("outbox").Inc()
		} else {
			ch <- prometheus.MustNewConstMetric(outboxWaitingDesc, prometheus.GaugeValue, float64(b.Waiting))
			ch <- prometheus.MustNewConstMetric(outboxOldestDesc, prometheus.GaugeValue, oldestAge(b, s.Clock.Now()).Seconds())
			ch <- prometheus.MustNewConstMetric(deferredDesc, prometheus.GaugeValue, float64(b.Deferred))
		}
	}
	if s.Webhooks != nil {
		ctx, cancel := context.WithTimeout(context.Background(), gaugeTimeout)
		defer cancel()
		if n, err := s.Webhooks.LiveDeliveries(ctx); err != nil {
			collectErrors.WithLabelValues("deliveries").Inc()
		} else {
			ch <- prometheus.MustNewConstMetric(liveDeliveriesDesc, prometheus.GaugeValue, float64(n))
		}
		if byPhase, err := s.Webhooks.EndpointsByPhase(ctx); err != nil {
			collectErrors.WithLabelValues("endpoints").Inc()
		} else {
			for _, p := range endpointPhases {
				ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, float64(byPhase[p]), string(p))
			}
		}
	}
}

// oldestAge is how long the oldest waiting event has waited (0 when none waits).
func oldestAge(b OutboxBacklog, now time.Time) time.Duration {
	if b.Waiting == 0 || b.Oldest.IsZero() {
		return 0
	}
	return max(now.Sub(b.Oldest), 0)
}

// CacheWebhookResources counts webhook resources through a cache-backed reader (the
// manager's client): no request reaches the kube-apiserver at scrape time.
type CacheWebhookResources struct {
	Reader client.Reader
}

// LiveDeliveries counts WebhookDeliveries: a finished one is removed from the cluster.
func (c CacheWebhookResources) LiveDeliveries(ctx context.Context) (int, error) {
	list := &switchboardv1alpha1.WebhookDeliveryList{}
	if err := c.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// EndpointsByPhase counts WebhookEndpoints by status phase; one the controller has not
// reconciled yet counts by its spec (Paused or Active).
func (c CacheWebhookResources) EndpointsByPhase(ctx context.Context) (map[switchboardv1alpha1.WebhookEndpointPhase]int, error) {
	list := &switchboardv1alpha1.WebhookEndpointList{}
	if err := c.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	counts := map[switchboardv1alpha1.WebhookEndpointPhase]int{}
	for i := range list.Items {
		p := list.Items[i].Status.Phase
		if p == "" {
			p = switchboardv1alpha1.WebhookEndpointPhaseActive
			if list.Items[i].Spec.Paused {
				p = switchboardv1alpha1.WebhookEndpointPhasePaused
			}
		}
		counts[p]++
	}
	return counts, nil
}
