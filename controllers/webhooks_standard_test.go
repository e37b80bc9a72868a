package controllers

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

var _ = Describe("Standard Webhooks signatures", func() {
	var e *whEnv
	BeforeEach(func() { e = newWebhookEnv() })

	// verifyBoth checks one received request with the official Standard Webhooks library and
	// with api/webhookverify, and that both schemes name the same event and moment.
	verifyBoth := func(secret string, r received) {
		GinkgoHelper()
		Expect(verifyWith(secret, e.clk.Now(), r)).To(Succeed(), "api/webhookverify")
		wh, err := standardwebhooks.NewWebhook(secret)
		Expect(err).NotTo(HaveOccurred())
		// The library checks the timestamp against the wall clock; the manager runs on a fake
		// one, so the timestamp is compared with the spec's header instead.
		Expect(wh.VerifyIgnoringTimestamp(r.body, r.header)).To(Succeed(), "standard-webhooks library")
		Expect(r.header.Get("webhook-id")).To(Equal(r.header.Get(send.HeaderDelivery)))
		Expect(r.header.Get("webhook-timestamp")).To(Equal(r.header.Get(send.HeaderTimestamp)))
		wrong, err := standardwebhooks.NewWebhook(send.NewSecret())
		Expect(err).NotTo(HaveOccurred())
		Expect(wrong.VerifyIgnoringTimestamp(r.body, r.header)).To(MatchError(standardwebhooks.ErrNoMatchingSignature))
	}

	It("signs first attempts, retries and resends in both schemes with the one secret, old hex secrets included", func() {
		ep, secret := e.endpoint("whep-std")
		Expect(secret).To(MatchRegexp(`^whsec_[A-Za-z0-9+/]{43}=$`), "whsec_ and base64 of 32 bytes")
		e.rcv.status.Store(500)
		id := e.event(events.CallEnded)
		e.waitRetrying(id, 1)
		e.rcv.status.Store(204)
		e.clk.Step(time.Minute)
		Eventually(func() []historyRow { return e.history(id) }).WithTimeout(20 * time.Second).Should(
			Equal([]historyRow{{Status: "succeeded", Attempts: 2, Code: 204, Endpoint: ep.Name}}))
		resend := send.NewDelivery(ep, id.String(), events.CallEnded, "whdl-std", "resend-1")
		Expect(k8sClient.Create(ctx, resend)).To(Succeed())
		Eventually(func() int { return len(e.history(id)) }).WithTimeout(20 * time.Second).Should(Equal(2))
		reqs := e.rcv.all()
		Expect(reqs).To(HaveLen(3), "first attempt, retry, resend")
		for _, r := range reqs {
			verifyBoth(secret, r)
		}
		Expect(reqs[1].header.Get("webhook-timestamp")).NotTo(Equal(reqs[0].header.Get("webhook-timestamp")), "each attempt's own time")

		// An endpoint whose secret was made before (whsec_ and 64 hex digits) verifies in both too.
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		legacy := send.SecretPrefix + hex.EncodeToString(raw)
		sec := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: send.SecretName(ep.Name)}, sec)).To(Succeed())
		sec.Data[switchboardv1alpha1.SigningSecretKey] = []byte(legacy)
		Expect(k8sClient.Update(ctx, sec)).To(Succeed())
		Eventually(func(g Gomega) {
			second := e.event(events.CallEnded)
			g.Eventually(func() int { return len(e.history(second)) }).WithTimeout(20 * time.Second).Should(Equal(1))
			last := e.rcv.all()[len(e.rcv.all())-1]
			g.Expect(verifyWith(legacy, e.clk.Now(), last)).To(Succeed(), "the manager's cache sees the new secret")
		}).WithTimeout(20 * time.Second).Should(Succeed())
		verifyBoth(legacy, e.rcv.all()[len(e.rcv.all())-1])
	})
})
