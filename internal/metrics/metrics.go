// Package metrics defines Switchboard's own Prometheus metrics and registers them on
// controller-runtime's registry, which the manager serves on its metrics endpoint next to
// controller-runtime's own. Labels never name an account, endpoint or key: their values come
// from small fixed sets (route templates, status codes, classes), so the series count stays
// bounded however many customers there are.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Label values of rate-limit refusals (APIRateLimited).
const (
	LimitPerUser        = "per_user"
	LimitWebhookAdd     = "webhooks_add"
	LimitWebhookTest    = "webhooks_test"
	LimitWebhookResend  = "webhooks_resend"
	LimitWebhookRecover = "webhooks_recover"
	unmatchedRoute      = "unmatched"
	outcomeSucceeded    = "succeeded"
	outcomeFailed       = "failed"
	outcomeCancelled    = "cancelled"
	transcriptCompleted = "completed"
	transcriptFailed    = "failed"
)

var (
	apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_api_requests_total",
		Help: "Requests to the public v1 API by route template, method and status code.",
	}, []string{"route", "method", "code"})
	apiDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchboard_api_request_duration_seconds",
		Help:    "Time to answer a public v1 API request, by route template and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	apiRateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_api_rate_limited_total",
		Help: "Requests refused with 429, by the limit that refused them.",
	}, []string{"limit"})

	webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_webhook_attempts_total",
		Help: "Webhook delivery attempts by result class: 2xx, 3xx, 4xx, 5xx, timeout, refused (address guard), network_error.",
	}, []string{"result"})
	webhookDeliveriesFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_webhook_deliveries_finished_total",
		Help: "Webhook deliveries that ended, by outcome: succeeded, failed (retries exhausted), cancelled.",
	}, []string{"outcome"})
	webhookEventToSuccess = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "switchboard_webhook_event_to_success_seconds",
		Help: "Time from an event occurring to the successful attempt of its delivery to an endpoint (retries included).",
		// Up to the spec's retry schedule: seconds when healthy, hours when an endpoint recovers late.
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
	})
	webhookDeliveriesRouted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_webhook_deliveries_routed_total",
		Help: "Deliveries of claimed events by route (first_attempt, controller, cancelled) and the admission rule that chose it (Admitted when none held it back).",
	}, []string{"route", "rule"})
	webhookEndpointLists = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_webhook_endpoint_lists_total",
		Help: "Lists of an account's webhook endpoints made to fan out its events, by source: cache (the watched cache had seen the account's last endpoint write) or live (kube-apiserver).",
	}, []string{"source"})
	webhookSwitchOffs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_webhook_endpoint_switch_offs_total",
		Help: "Webhook endpoints switched off after failing continuously for 24 hours.",
	})

	transcriptionJobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_transcription_jobs_finished_total",
		Help: "Transcription jobs that finished, by outcome: completed, failed (charge refunded).",
	}, []string{"outcome"})
	transcriptionJobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchboard_transcription_job_duration_seconds",
		Help:    "Time from a transcription job's creation to its end, by outcome.",
		Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"outcome"})
	transcriptionChargedMinutes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_transcription_charged_minutes_total",
		Help: "Transcription minutes charged, by source: allowance (plan), bundle (prepaid minutes), balance (paid in pence).",
	}, []string{"source"})
	transcriptionChargedPence = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_transcription_charged_pence_total",
		Help: "Pence taken from prepaid balances for transcriptions (allowance and bundle minutes cost no pence).",
	})
	transcriptionRefundedPence = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_transcription_refunded_pence_total",
		Help: "Pence given back to balances for failed transcriptions.",
	})

	ingestReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_ingest_reports_total",
		Help: "Platform reports by kind (call, text, message_slip) and result (stored, duplicate, unknown_number, rejected, error).",
	}, []string{"kind", "result"})

	collectErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_metrics_collect_errors_total",
		Help: "Gauges left out of a scrape because their source (PostgreSQL, the informer cache) did not answer in time.",
	}, []string{"source"})
)

// collectors are every metric of this package.
var collectors = []prometheus.Collector{apiRequests, apiDuration, apiRateLimited,
	webhookAttempts, webhookDeliveriesFinished, webhookDeliveriesRouted, webhookEventToSuccess, webhookSwitchOffs, webhookEndpointLists,
	transcriptionJobs, transcriptionJobDuration, transcriptionChargedMinutes, transcriptionChargedPence, transcriptionRefundedPence,
	ingestReports, collectErrors, gauges}

func init() { collectors = append(collectors, retentionCollectors...) }

func init() {
	ctrlmetrics.Registry.MustRegister(collectors...)
	// Series of fixed label sets start at 0, so rate() and increase() see their first event.
	for _, l := range []string{LimitPerUser, LimitWebhookAdd, LimitWebhookTest, LimitWebhookResend, LimitWebhookRecover} {
		apiRateLimited.WithLabelValues(l)
	}
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx", "timeout", "refused", "network_error"} {
		webhookAttempts.WithLabelValues(c)
	}
	for _, o := range []string{outcomeSucceeded, outcomeFailed, outcomeCancelled} {
		webhookDeliveriesFinished.WithLabelValues(o)
	}
	for _, o := range []string{transcriptCompleted, transcriptFailed} {
		transcriptionJobs.WithLabelValues(o)
	}
	for _, s := range []string{"allowance", "bundle", "balance"} {
		transcriptionChargedMinutes.WithLabelValues(s)
	}
	for _, s := range []string{"outbox", "deliveries", "endpoints"} {
		collectErrors.WithLabelValues(s)
	}
}

// APIRequest counts one answered API request. route is go-restful's route template (never
// the raw path, which holds ids); empty when no route matched.
func APIRequest(route, method string, code int, took time.Duration) {
	if route == "" {
		route = unmatchedRoute
	}
	apiRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	apiDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// APIRateLimited counts a 429 of the given limit (LimitPerUser, LimitWebhookAdd, ...).
func APIRateLimited(limit string) { apiRateLimited.WithLabelValues(limit).Inc() }

// WebhookAttempt counts one attempt of the given class (see send.AttemptClass).
func WebhookAttempt(class string) { webhookAttempts.WithLabelValues(class).Inc() }

// WebhookDeliveryFinished counts a delivery that ended in phase (Succeeded, Failed, Cancelled).
func WebhookDeliveryFinished(phase switchboardv1alpha1.WebhookDeliveryPhase) {
	webhookDeliveriesFinished.WithLabelValues(deliveryOutcome(phase)).Inc()
}

// WebhookEventSucceeded records how long after its event a delivery succeeded.
func WebhookEventSucceeded(sinceEvent time.Duration) {
	webhookEventToSuccess.Observe(max(sinceEvent, 0).Seconds())
}

// WebhookDeliveryRouted counts a delivery of a claimed event made by route, as rule decided.
func WebhookDeliveryRouted(route, rule string) {
	webhookDeliveriesRouted.WithLabelValues(route, rule).Inc()
}

// WebhookEndpointListed counts a list of an account's endpoints for a fan-out, by source.
func WebhookEndpointListed(source string) { webhookEndpointLists.WithLabelValues(source).Inc() }

// WebhookEndpointSwitchedOff counts a switch-off.
func WebhookEndpointSwitchedOff() { webhookSwitchOffs.Inc() }

// TranscriptionJobFinished counts a job that reached phase (Completed or Failed) after took.
func TranscriptionJobFinished(phase switchboardv1alpha1.TranscriptionJobPhase, took time.Duration) {
	outcome := transcriptFailed
	if phase == switchboardv1alpha1.TranscriptionJobPhaseCompleted {
		outcome = transcriptCompleted
	}
	transcriptionJobs.WithLabelValues(outcome).Inc()
	transcriptionJobDuration.WithLabelValues(outcome).Observe(max(took, 0).Seconds())
}

// TranscriptionCharged counts a new charge: minutes from the allowance, the bundle and the
// balance, and the pence the balance paid.
func TranscriptionCharged(allowanceMinutes, bundleMinutes, balanceMinutes int, pence int64) {
	transcriptionChargedMinutes.WithLabelValues("allowance").Add(float64(max(allowanceMinutes, 0)))
	transcriptionChargedMinutes.WithLabelValues("bundle").Add(float64(max(bundleMinutes, 0)))
	transcriptionChargedMinutes.WithLabelValues("balance").Add(float64(max(balanceMinutes, 0)))
	transcriptionChargedPence.Add(float64(max(pence, 0)))
}

// TranscriptionRefunded counts pence given back for a failed transcription.
func TranscriptionRefunded(pence int64) { transcriptionRefundedPence.Add(float64(max(pence, 0))) }

// IngestReport counts a platform report of kind answered with status.
func IngestReport(kind string, status int) {
	ingestReports.WithLabelValues(kind, IngestResult(status)).Inc()
}

// IngestResult names what a platform report's answer status means.
func IngestResult(status int) string {
	switch {
	case status == 201:
		return "stored"
	case status == 200:
		return "duplicate"
	case status == 404:
		return "unknown_number"
	case status >= 500:
		return "error"
	case status >= 400:
		return "rejected"
	}
	return "other"
}

// deliveryOutcome is the label of a finished delivery's phase.
func deliveryOutcome(phase switchboardv1alpha1.WebhookDeliveryPhase) string {
	switch phase {
	case switchboardv1alpha1.WebhookDeliveryPhaseSucceeded:
		return outcomeSucceeded
	case switchboardv1alpha1.WebhookDeliveryPhaseCancelled:
		return outcomeCancelled
	}
	return outcomeFailed
}
