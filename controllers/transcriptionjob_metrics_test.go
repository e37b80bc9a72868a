/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

var _ = Describe("Transcription metrics", func() {
	It("counts the charge by source and in pence, the failed job, and the pence refunded", func() {
		minutes := func(source string) float64 {
			return metricValue("switchboard_transcription_charged_minutes_total", map[string]string{"source": source})
		}
		pence := func() float64 { return metricValue("switchboard_transcription_charged_pence_total", nil) }
		refunded := func() float64 { return metricValue("switchboard_transcription_refunded_pence_total", nil) }
		failed := func() float64 {
			return metricValue("switchboard_transcription_jobs_finished_total", map[string]string{"outcome": "failed"})
		}
		durations := func() float64 {
			return metricValue("switchboard_transcription_job_duration_seconds", map[string]string{"outcome": "failed"})
		}
		allowanceBefore, bundleBefore, balanceBefore := minutes("allowance"), minutes("bundle"), minutes("balance")
		penceBefore, refundedBefore, failedBefore, durationsBefore := pence(), refunded(), failed(), durations()

		// The month's allowance is used up: the minutes come from the balance at 5p.
		t := funded(1000)
		ch := start(t, recorded(t, "refuse this", txtest.CallOptions{}))
		Expect(ch.AmountPence).To(BeNumerically(">", 0))
		Expect(minutes("allowance") - allowanceBefore).To(Equal(float64(ch.AllowanceMinutes)))
		Expect(minutes("bundle") - bundleBefore).To(Equal(float64(ch.BundleMinutes)))
		Expect(minutes("balance") - balanceBefore).To(Equal(float64(ch.Minutes - ch.AllowanceMinutes - ch.BundleMinutes)))
		Expect(pence() - penceBefore).To(Equal(float64(ch.AmountPence)))

		eventuallyPhase(ch, switchboardv1alpha1.TranscriptionJobPhaseFailed)
		Expect(failed() - failedBefore).To(Equal(1.0))
		Expect(durations() - durationsBefore).To(Equal(1.0))
		Expect(refunded() - refundedBefore).To(Equal(float64(ch.AmountPence)))
	})
})
