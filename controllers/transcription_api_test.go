/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// The transcription state table through the public API, with the real kube-apiserver and
// controller behind it: not transcribed → pending (charged) → completed (transcript.ready,
// summary on Get a call) → transcribe again: unchanged, no charge.
var _ = Describe("Transcription through the API", func() {
	var api *apitest.API
	BeforeEach(func() {
		srv := httptest.NewUnstartedServer(nil)
		srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: tj.clock,
			Log: logr.Discard(), RequestsPerMinute: 100000, Kube: k8sClient}, tj.store)
		srv.Start()
		DeferCleanup(srv.Close)
		api = apitest.New(srv.URL)
	})

	It("goes from not transcribed to pending to completed, and a repeat costs nothing", func() {
		t := funded(1000)
		c := recorded(t, "Hello, please call me back on 020 7946 0018 today.", txtest.CallOptions{Seconds: 61})
		do := func(method, path string) *apitest.Response { return api.Do(GinkgoT(), t.OwnerKey, method, path, nil) }

		By("not transcribed: the transcript is {} and the estimate prices it")
		Expect(do("GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript").Map(GinkgoT())).To(BeEmpty())
		est := do("GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript/estimate").Map(GinkgoT())
		Expect(est).To(HaveKeyWithValue("minutes", BeNumerically("==", 2)))
		Expect(est).To(HaveKeyWithValue("cost_pence", BeNumerically("==", 10)))
		Expect(est).To(HaveKeyWithValue("affordable", true))
		Expect(est).To(HaveKeyWithValue("existing_status", BeNil()))

		By("POST transcribe: 202 pending, charged")
		resp := do("POST", "/v1/calls/"+c.PublicID+"/transcribe")
		Expect(resp.Status).To(Equal(http.StatusAccepted), resp.String())
		Expect(resp.Map(GinkgoT())).To(Equal(map[string]any{"call_public_id": c.PublicID, "status": "pending", "summary_status": "pending"}))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID).BalancePence).To(Equal(int64(990)))

		By("the background work completes: summary readable from Get a call, transcript.ready queued")
		Eventually(func(g Gomega) {
			call := api.Do(GinkgoT(), t.OwnerKey, "GET", "/v1/calls/"+c.PublicID, nil).Map(GinkgoT())
			tr, _ := call["transcript"].(map[string]any)
			g.Expect(tr).To(HaveKeyWithValue("status", "completed"))
			g.Expect(tr).To(HaveKeyWithValue("summary_status", "completed"))
			g.Expect(tr).To(HaveKeyWithValue("callback_number", "+447700900456"))
			g.Expect(tr).To(HaveKeyWithValue("urgency", "normal"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		tr := do("GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript").Map(GinkgoT())
		Expect(tr).To(HaveKeyWithValue("text", "Hello, please call me back on 020 7946 0018 today."))
		Expect(tr).To(HaveKeyWithValue("minutes", BeNumerically("==", 2)))
		Expect(tr).To(HaveKeyWithValue("rated_amount_pence", BeNumerically("==", 10)))
		Expect(tr["segments"]).To(HaveLen(1))
		Expect(countRows(`SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready'`, c.ID)).To(Equal(1))
		Expect(do("GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript/estimate").Map(GinkgoT())).To(HaveKeyWithValue("existing_status", "completed"))

		By("transcribe again: 202, unchanged, no charge, no second job")
		resp = do("POST", "/v1/calls/"+c.PublicID+"/transcribe")
		Expect(resp.Status).To(Equal(http.StatusAccepted))
		Expect(resp.Map(GinkgoT())).To(Equal(map[string]any{"call_public_id": c.PublicID, "status": "completed", "summary_status": "completed"}))
		Expect(txtest.MoneyOf(GinkgoT(), tj.store, t.Account.ID)).To(Equal(txtest.Money{BalancePence: 990, LedgerSum: 990, LedgerEntries: 2}))
		var jobs switchboardv1alpha1.TranscriptionJobList
		Expect(k8sClient.List(ctx, &jobs)).To(Succeed())
		n := 0
		for _, j := range jobs.Items {
			if j.Spec.CallPublicID == c.PublicID {
				n++
			}
		}
		Expect(n).To(Equal(1))
		Expect(countRows(`SELECT count(*) FROM transcription_charges WHERE call_id = $1`, c.ID)).To(Equal(1))
	})

	It("answers 403, 404 and 422 without charging or creating jobs", func() {
		t := funded(1000)
		c := recorded(t, "Hello.", txtest.CallOptions{})
		bare := txtest.RecordedCall(GinkgoT(), tj.store, t.Account.ID, txtest.CallOptions{Kind: "none"})
		readKey := apitest.NewKey(GinkgoT(), tj.store, t.Owner.ID, "read")
		other := funded(1000)
		for _, tc := range []struct {
			key, call string
			status    int
		}{
			{readKey, c.PublicID, http.StatusForbidden},
			{other.OwnerKey, c.PublicID, http.StatusNotFound},
			{t.OwnerKey, "call_unknown", http.StatusNotFound},
			{t.OwnerKey, bare.PublicID, http.StatusUnprocessableEntity},
		} {
			resp := api.Do(GinkgoT(), tc.key, "POST", "/v1/calls/"+tc.call+"/transcribe", nil)
			Expect(resp.Status).To(Equal(tc.status), resp.String())
		}
		Expect(countRows(`SELECT count(*) FROM transcription_charges WHERE account_id IN ($1, $2)`, t.Account.ID, other.Account.ID)).To(BeZero())
		var jobs switchboardv1alpha1.TranscriptionJobList
		Expect(k8sClient.List(ctx, &jobs, client.InNamespace(tenancy.Namespace(t.Account.PublicID)))).To(Succeed())
		Expect(jobs.Items).To(BeEmpty())
	})

	It("answers 402 with the estimate when the balance cannot pay, and charges nothing", func() {
		t := funded(4)
		c := recorded(t, "Hello.", txtest.CallOptions{Seconds: 30})
		resp := api.Do(GinkgoT(), t.OwnerKey, "POST", "/v1/calls/"+c.PublicID+"/transcribe", nil)
		Expect(resp.Status).To(Equal(http.StatusPaymentRequired))
		body := resp.Map(GinkgoT())
		Expect(body["estimate"]).To(HaveKeyWithValue("cost_pence", BeNumerically("==", 5)))
		Expect(body["estimate"]).To(HaveKeyWithValue("affordable", false))
		Expect(countRows(`SELECT count(*) FROM transcription_charges WHERE call_id = $1`, c.ID)).To(BeZero())
		_, err := tj.store.GetTranscript(ctx, t.Account.ID, c.RecordingID)
		Expect(err).To(MatchError(store.ErrNotFound))
	})
})
