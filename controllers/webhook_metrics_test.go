/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// metricValue sums the series of name whose labels include labels (counters and gauges; a
// histogram's sample count), from the registry the manager serves on /metrics.
func metricValue(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	sum := 0.0
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == k && lp.GetValue() == v)
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

var _ = Describe("Webhook metrics", func() {
	var e *whEnv
	BeforeEach(func() { e = newWebhookEnv() })

	It("counts every failed attempt, the delivery that fails for good, the switch-off and the cancelled event after it", func() {
		attempts5xx := func() float64 {
			return metricValue("switchboard_webhook_attempts_total", map[string]string{"result": "5xx"})
		}
		finished := func(outcome string) float64 {
			return metricValue("switchboard_webhook_deliveries_finished_total", map[string]string{"outcome": outcome})
		}
		switchOffs := func() float64 { return metricValue("switchboard_webhook_endpoint_switch_offs_total", nil) }
		successes := func() float64 { return metricValue("switchboard_webhook_event_to_success_seconds", nil) }
		attemptsBefore, failedBefore, cancelledBefore, switchOffsBefore, successesBefore :=
			attempts5xx(), finished("failed"), finished("cancelled"), switchOffs(), successes()

		e.rcv.status.Store(500)
		ep, _ := e.endpoint("whep-metrics")
		id := e.event(events.CallEnded)
		for i, delay := range send.RetryDelays {
			e.waitRetrying(id, int32(i+1))
			e.clk.Step(delay)
		}
		Eventually(func() int { return len(e.history(id)) }).WithTimeout(20 * time.Second).Should(Equal(1))
		Expect(attempts5xx() - attemptsBefore).To(Equal(float64(len(send.RetryDelays) + 1)))
		Expect(finished("failed") - failedBefore).To(Equal(1.0))
		Expect(successes() - successesBefore).To(BeZero())
		Expect(switchOffs()-switchOffsBefore).To(BeZero(), "12h36m of failure is not yet 24 hours")

		e.clk.SetTime(t0.Add(24 * time.Hour))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ep), ep)).To(Succeed())
			g.Expect(ep.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		// At least: this manager watches the whole cluster, where earlier specs' endpoints (failing
		// since the same t0) may still be, and the switch-off or cancellation of those counts too.
		Expect(switchOffs() - switchOffsBefore).To(BeNumerically(">=", 1))

		// An event for the switched-off endpoint is listed as cancelled, never attempted.
		off := e.event(events.CallEnded)
		Eventually(func() []historyRow { return e.history(off) }).WithTimeout(20 * time.Second).Should(HaveLen(1))
		Expect(e.history(off)[0].Status).To(Equal("cancelled"))
		Expect(finished("cancelled") - cancelledBefore).To(BeNumerically(">=", 1))
		Expect(attempts5xx() - attemptsBefore).To(Equal(float64(len(send.RetryDelays) + 1)))
	})
})
