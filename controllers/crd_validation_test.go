/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const testEventID = "3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1f34"

func validEndpoint(ns string) *switchboardv1alpha1.WebhookEndpoint {
	return &switchboardv1alpha1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wh-crm"},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{
			AccountID:        "acc_123",
			DisplayName:      "CRM",
			URL:              "https://hooks.example.com/switchboard",
			Events:           []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded, switchboardv1alpha1.EventTranscriptReady},
			SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: "wh-crm-signing"},
		},
	}
}

func validDelivery(ns string) *switchboardv1alpha1.WebhookDelivery {
	return &switchboardv1alpha1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wh-crm-" + testEventID},
		Spec: switchboardv1alpha1.WebhookDeliverySpec{
			AccountID:    "acc_123",
			EndpointName: "wh-crm",
			EventID:      testEventID,
			EventType:    switchboardv1alpha1.EventCallEnded,
		},
	}
}

func validJob(ns string) *switchboardv1alpha1.TranscriptionJob {
	return &switchboardv1alpha1.TranscriptionJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-abc"},
		Spec: switchboardv1alpha1.TranscriptionJobSpec{
			AccountID:          "acc_123",
			CallPublicID:       "call_abc",
			RecordingPublicID:  "rec_abc",
			ChargeID:           "42",
			ChargedMinutes:     5,
			ChargedAmountPence: 30,
			AllowanceMinutes:   2,
			BundleMinutes:      1,
		},
	}
}

// expectInvalid asserts err is a 422 Invalid whose text holds every one of msgs.
func expectInvalid(err error, msgs ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got: %v", err)
	for _, m := range msgs {
		Expect(err.Error()).To(ContainSubstring(m))
	}
}

var _ = Describe("WebhookEndpoint validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("accepts a valid endpoint, with or without a signing secret reference", func() {
		Expect(k8sClient.Create(ctx, validEndpoint(ns))).To(Succeed())
		noRef := validEndpoint(ns)
		noRef.Name = "wh-no-ref"
		noRef.Spec.SigningSecretRef = nil
		noRef.Spec.Events = []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded, switchboardv1alpha1.EventVoicemailReceived, switchboardv1alpha1.EventTranscriptReady}
		noRef.Spec.Paused = true
		Expect(k8sClient.Create(ctx, noRef)).To(Succeed())
	})

	DescribeTable("rejects a bad spec with a clear message",
		func(mutate func(*switchboardv1alpha1.WebhookEndpoint), msgs ...string) {
			ep := validEndpoint(ns)
			mutate(ep)
			expectInvalid(k8sClient.Create(ctx, ep), msgs...)
		},
		Entry("http:// URL", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.URL = "http://hooks.example.com/x" },
			"url must start with https://"),
		Entry("URL without a host", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.URL = "https://" },
			"url must be an absolute URL with a host name"),
		Entry("URL too long", func(e *switchboardv1alpha1.WebhookEndpoint) {
			e.Spec.URL = "https://example.com/" + strings.Repeat("a", 2048)
		},
			"spec.url", "Too long"),
		Entry("unknown event", func(e *switchboardv1alpha1.WebhookEndpoint) {
			e.Spec.Events = []switchboardv1alpha1.WebhookEventType{"call.started"}
		},
			`Unsupported value: "call.started"`, `"call.ended"`),
		Entry("test is not subscribable", func(e *switchboardv1alpha1.WebhookEndpoint) {
			e.Spec.Events = []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventTest}
		},
			`Unsupported value: "test"`),
		Entry("no events", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.Events = []switchboardv1alpha1.WebhookEventType{} },
			"spec.events", "at least 1 items"),
		Entry("repeated event", func(e *switchboardv1alpha1.WebhookEndpoint) {
			e.Spec.Events = []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded, switchboardv1alpha1.EventCallEnded}
		}, "spec.events[1]", "Duplicate value"),
		Entry("empty name", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.DisplayName = "" },
			"spec.displayName", "at least 1 chars"),
		Entry("name over 100 characters", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.DisplayName = strings.Repeat("n", 101) },
			"spec.displayName", "Too long"),
		Entry("bad secret name", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.SigningSecretRef.Name = "Not_A_Name" },
			"name must be a valid Secret name"),
		Entry("no account", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.AccountID = "" },
			"spec.accountID"),
		Entry("rate limit 0", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.RateLimit = ptr.To[int32](0) },
			"spec.rateLimit"),
		Entry("rate limit over 1000", func(e *switchboardv1alpha1.WebhookEndpoint) { e.Spec.RateLimit = ptr.To[int32](1001) },
			"spec.rateLimit"),
	)

	It("keeps accountID immutable but lets the rest of the spec change", func() {
		ep := validEndpoint(ns)
		Expect(k8sClient.Create(ctx, ep)).To(Succeed())

		ep.Spec.URL = "https://other.example.com/hook"
		ep.Spec.Paused = true
		ep.Spec.DisplayName = "Renamed"
		Expect(k8sClient.Update(ctx, ep)).To(Succeed())

		ep.Spec.AccountID = "acc_other"
		expectInvalid(k8sClient.Update(ctx, ep), "accountID is immutable")
	})

	It("rejects a status phase outside Active, Paused, SwitchedOff", func() {
		ep := validEndpoint(ns)
		Expect(k8sClient.Create(ctx, ep)).To(Succeed())
		ep.Status.Phase = "Deleted"
		expectInvalid(k8sClient.Status().Update(ctx, ep), `Unsupported value: "Deleted"`)
	})
})

var _ = Describe("WebhookDelivery validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("accepts a valid delivery, a test delivery and a resend", func() {
		Expect(k8sClient.Create(ctx, validDelivery(ns))).To(Succeed())
		test := validDelivery(ns)
		test.Name = "wh-crm-test"
		test.Spec.EventType = switchboardv1alpha1.EventTest
		Expect(k8sClient.Create(ctx, test)).To(Succeed())
		resend := validDelivery(ns)
		resend.Name = "wh-crm-resend"
		resend.Spec.ResendOf = validDelivery(ns).Name
		Expect(k8sClient.Create(ctx, resend)).To(Succeed())
	})

	DescribeTable("rejects a bad spec with a clear message",
		func(mutate func(*switchboardv1alpha1.WebhookDelivery), msgs ...string) {
			d := validDelivery(ns)
			mutate(d)
			expectInvalid(k8sClient.Create(ctx, d), msgs...)
		},
		Entry("eventID not a UUID", func(d *switchboardv1alpha1.WebhookDelivery) { d.Spec.EventID = "not-a-uuid" },
			"eventID must be a lower-case UUID"),
		Entry("upper-case eventID", func(d *switchboardv1alpha1.WebhookDelivery) { d.Spec.EventID = strings.ToUpper(testEventID) },
			"eventID must be a lower-case UUID"),
		Entry("unknown event type", func(d *switchboardv1alpha1.WebhookDelivery) { d.Spec.EventType = "call.started" },
			`Unsupported value: "call.started"`),
		Entry("bad endpoint name", func(d *switchboardv1alpha1.WebhookDelivery) { d.Spec.EndpointName = "Bad Name" },
			"endpointName must be the name of a WebhookEndpoint"),
		Entry("no endpoint", func(d *switchboardv1alpha1.WebhookDelivery) { d.Spec.EndpointName = "" },
			"spec.endpointName"),
	)

	It("keeps the whole spec immutable", func() {
		d := validDelivery(ns)
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		d.Spec.EndpointName = "another"
		expectInvalid(k8sClient.Update(ctx, d), "spec is immutable")

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.ResendOf = "something"
		expectInvalid(k8sClient.Update(ctx, d), "spec is immutable")
	})

	It("takes attempts, codes and times through the status subresource", func() {
		d := validDelivery(ns)
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		now := metav1.Now()
		d.Status = switchboardv1alpha1.WebhookDeliveryStatus{
			Phase: switchboardv1alpha1.WebhookDeliveryPhaseRetrying, Attempts: 2, NextAttemptAt: &now, LastAttemptAt: &now,
			LastResponseCode: 503, LastError: "HTTP 503",
		}
		Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())

		d.Status.Attempts = -1
		expectInvalid(k8sClient.Status().Update(ctx, d), "status.attempts")
	})
})

var _ = Describe("TranscriptionJob validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("accepts a valid job", func() {
		Expect(k8sClient.Create(ctx, validJob(ns))).To(Succeed())
	})

	It("defaults allowanceMinutes and bundleMinutes to 0 when a manifest leaves them out", func() {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": switchboardv1alpha1.GroupVersion.String(),
			"kind":       "TranscriptionJob",
			"metadata":   map[string]any{"namespace": ns, "name": "from-yaml"},
			"spec": map[string]any{
				"accountID": "acc_123", "callPublicID": "call_1", "recordingPublicID": "rec_1",
				"chargeID": "7", "chargedMinutes": int64(3), "chargedAmountPence": int64(18),
			},
		}}
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		var got switchboardv1alpha1.TranscriptionJob
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "from-yaml"}, &got)).To(Succeed())
		Expect(got.Spec.AllowanceMinutes).To(BeZero())
		Expect(got.Spec.BundleMinutes).To(BeZero())
	})

	DescribeTable("rejects a bad spec with a clear message",
		func(mutate func(*switchboardv1alpha1.TranscriptionJob), msgs ...string) {
			j := validJob(ns)
			mutate(j)
			expectInvalid(k8sClient.Create(ctx, j), msgs...)
		},
		Entry("negative pence", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.ChargedAmountPence = -1 },
			"spec.chargedAmountPence", "greater than or equal to 0"),
		Entry("negative minutes", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.ChargedMinutes = -1 },
			"spec.chargedMinutes", "greater than or equal to 0"),
		Entry("negative allowance", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.AllowanceMinutes = -1 },
			"spec.allowanceMinutes", "greater than or equal to 0"),
		Entry("more free minutes than charged", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.AllowanceMinutes, j.Spec.BundleMinutes = 4, 2 },
			"allowanceMinutes plus bundleMinutes cannot exceed chargedMinutes"),
		Entry("no charge id", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.ChargeID = "" },
			"spec.chargeID"),
		Entry("no call", func(j *switchboardv1alpha1.TranscriptionJob) { j.Spec.CallPublicID = "" },
			"spec.callPublicID"),
	)

	It("keeps the whole spec immutable", func() {
		j := validJob(ns)
		Expect(k8sClient.Create(ctx, j)).To(Succeed())
		j.Spec.ChargedAmountPence = 0
		expectInvalid(k8sClient.Update(ctx, j), "spec is immutable")
	})
})

var _ = Describe("Status subresource", func() {
	It("ignores status written through Update and takes it through UpdateStatus", func() {
		ns := newNamespace()
		ep := validEndpoint(ns)
		Expect(k8sClient.Create(ctx, ep)).To(Succeed())
		key := client.ObjectKeyFromObject(ep)

		By("writing status with a plain Update")
		ep.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseSwitchedOff
		ep.Spec.DisplayName = "Changed"
		Expect(k8sClient.Update(ctx, ep)).To(Succeed())
		var got switchboardv1alpha1.WebhookEndpoint
		Expect(k8sClient.Get(ctx, key, &got)).To(Succeed())
		Expect(got.Spec.DisplayName).To(Equal("Changed"))
		Expect(got.Status.Phase).To(BeEmpty())
		Expect(got.Generation).To(Equal(int64(2)))

		By("writing status through the status subresource")
		now := metav1.Now()
		got.Status.Phase = switchboardv1alpha1.WebhookEndpointPhaseActive
		got.Status.FailingSince = &now
		got.Status.ObservedGeneration = got.Generation
		got.Status.Conditions = []metav1.Condition{{
			Type: switchboardv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: switchboardv1alpha1.ReasonActive,
			Message: "deliveries are sent", LastTransitionTime: now, ObservedGeneration: got.Generation,
		}}
		got.Spec.DisplayName = "Ignored"
		Expect(k8sClient.Status().Update(ctx, &got)).To(Succeed())
		Expect(k8sClient.Get(ctx, key, &got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
		Expect(got.Status.Conditions).To(HaveLen(1))
		Expect(got.Spec.DisplayName).To(Equal("Changed"), "spec written through /status must be ignored")
		Expect(got.Generation).To(Equal(int64(2)), "a status write must not bump the generation")

		By("the manager's cache seeing the same object")
		Eventually(func(g Gomega) {
			var cached switchboardv1alpha1.WebhookEndpoint
			g.Expect(mgr.GetClient().Get(ctx, key, &cached)).To(Succeed())
			g.Expect(cached.Status.Phase).To(Equal(switchboardv1alpha1.WebhookEndpointPhaseActive))
		}).Should(Succeed())
	})
})

var _ = Describe("Installed CRDs", func() {
	type crdWant struct {
		name      string
		shortName string
		columns   []string
	}
	DescribeTable("have short names, the switchboard category, a status subresource and printer columns",
		func(want crdWant) {
			crd, err := apiextClient.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(string(crd.Spec.Scope)).To(Equal("Namespaced"))
			Expect(crd.Spec.Names.ShortNames).To(ContainElement(want.shortName))
			Expect(crd.Spec.Names.Categories).To(ContainElement("switchboard"))
			Expect(crd.Spec.Versions).To(HaveLen(1))
			v := crd.Spec.Versions[0]
			Expect(v.Name).To(Equal("v1alpha1"))
			Expect(v.Subresources).NotTo(BeNil())
			Expect(v.Subresources.Status).NotTo(BeNil())
			var cols []string
			for _, c := range v.AdditionalPrinterColumns {
				if c.Priority == 0 {
					cols = append(cols, c.Name)
				}
			}
			Expect(cols).To(Equal(want.columns))
			var ready bool
			for _, c := range v.AdditionalPrinterColumns {
				if c.Name == "Ready" {
					ready = c.JSONPath == `.status.conditions[?(@.type=="Ready")].status`
				}
			}
			Expect(ready).To(BeTrue(), "a Ready column reads the Ready condition")
		},
		Entry("WebhookEndpoint", crdWant{"webhookendpoints.switchboard.dev", "whep",
			[]string{"Ready", "Phase", "Name", "URL", "Rate", "Failing Since", "Age"}}),
		Entry("WebhookDelivery", crdWant{"webhookdeliveries.switchboard.dev", "whdl",
			[]string{"Endpoint", "Event", "Phase", "Attempts", "Next Attempt", "Age"}}),
		Entry("TranscriptionJob", crdWant{"transcriptionjobs.switchboard.dev", "tj",
			[]string{"Call", "Phase", "Minutes", "Amount", "Age"}}),
	)

	It("lists all three kinds under `kubectl get switchboard`", func() {
		Eventually(func(g Gomega) {
			list, err := discoveryC.ServerResourcesForGroupVersion(switchboardv1alpha1.GroupVersion.String())
			g.Expect(err).NotTo(HaveOccurred())
			var inCategory []string
			for _, r := range list.APIResources {
				for _, c := range r.Categories {
					if c == "switchboard" {
						inCategory = append(inCategory, r.Kind)
					}
				}
			}
			g.Expect(inCategory).To(ConsistOf("WebhookEndpoint", "WebhookDelivery", "TranscriptionJob"))
		}).Should(Succeed())
	})
})

var _ = Describe("config/samples", func() {
	It("are accepted by the installed CRDs", func() {
		ns := newNamespace()
		files, err := filepath.Glob(filepath.Join("..", "config", "samples", "switchboard_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(3))
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed(), f)
			u.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, u)).To(Succeed(), f)
		}
	})
})
