/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/speechsynth"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// A demo-style call (the agent's greeting, a caller leaving a callback number, the agent's
// goodbye; two channels of 8 kHz mu-law, spoken by Festival) transcribed through the public
// API by the engines as shipped: Vosk installed by hack/install-vosk.sh and the built-in
// summarizer, with the real controller and kube-apiserver between them.
var _ = Describe("Transcription by the engines as shipped", func() {
	It("hears a demo call's key words and its callback number", func(sctx SpecContext) {
		if out, err := exec.Command("../hack/install-vosk.sh").CombinedOutput(); err != nil {
			Skip(fmt.Sprintf("hack/install-vosk.sh cannot install Vosk here: %v: %s", err, out))
		}
		story := seed.DemoScripts()[0]
		turns := seed.DemoCallTurns(story)
		for _, t := range turns {
			if !speechsynth.UsesFestival(t.Voice) {
				Skip("festival or its voices are not installed (hack/install-speech-tools.sh)")
			}
		}
		audio, _, err := speechsynth.Conversation(sctx, turns, seed.DemoPause)
		Expect(err).NotTo(HaveOccurred())
		secs, err := speechsynth.Seconds(audio)
		Expect(err).NotTo(HaveOccurred())

		srv := httptest.NewUnstartedServer(nil)
		srv.Config.Handler = apiserver.New(apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: tj.clock,
			Log: logr.Discard(), RequestsPerMinute: 100000, Kube: k8sClient}, tj.store)
		srv.Start()
		DeferCleanup(srv.Close)
		api := apitest.New(srv.URL)

		t := funded(1000)
		c := recorded(t, string(audio), txtest.CallOptions{Seconds: int(math.Ceil(secs)), From: shippedCaller,
			StorageKey: fmt.Sprintf("%s/%sdemo-call.wav", t.Account.PublicID, shippedPrefix)})
		resp := api.Do(GinkgoT(), t.OwnerKey, "POST", "/v1/calls/"+c.PublicID+"/transcribe", nil)
		Expect(resp.Status).To(Equal(http.StatusAccepted), resp.String())

		var tr map[string]any
		Eventually(func(g Gomega) {
			tr = api.Do(GinkgoT(), t.OwnerKey, "GET", "/v1/recordings/"+c.RecordingPublicID+"/transcript", nil).Map(GinkgoT())
			g.Expect(tr).To(HaveKeyWithValue("summary_status", "completed"))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("transcript: %v\n", tr)

		By("the callback number is the one spoken, not the caller's own")
		Expect(tr).To(HaveKeyWithValue("callback_number", story.Callback))
		Expect(story.Callback).NotTo(Equal(shippedCaller))

		By("the script's key words are in the transcript")
		text, _ := tr["text"].(string)
		heard := " " + text + " "
		for _, w := range []string{"leaking", "radiator", "valve", "front", "room", "repair", "call", "back", "thank"} {
			Expect(heard).To(ContainSubstring(" "+w+" "), "key word %q", w)
		}

		By("segments follow the turns: the agent, then the caller, then the agent")
		segs, _ := tr["segments"].([]any)
		var speakers []string
		for _, s := range segs {
			sg := s.(map[string]any)
			Expect(sg["end"]).To(BeNumerically(">", sg["start"]))
			Expect(sg["end"]).To(BeNumerically("<=", secs))
			if sp := sg["speaker"].(string); len(speakers) == 0 || speakers[len(speakers)-1] != sp {
				speakers = append(speakers, sp)
			}
		}
		Expect(speakers).To(Equal([]string{"agent", "caller", "agent"}))
		Expect(len(segs)).To(BeNumerically(">", 3), "the caller's minute of speech in several segments: %v", segs)
	})
})
