/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// The fleet-wide bound on live deliveries (DefaultMaxLiveDeliveries) rests on these sizes:
// a retrying delivery with a typical error and with the longest it can carry (twice: status
// and condition), before kube-apiserver adds its own metadata.
func TestRetryingDeliverySize(t *testing.T) {
	ep := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "whep_0a1bc2d3e4f5g6h7", Namespace: "sb-acct-0a1bc2d3e4f5g6h7",
		UID: "0b9f1a52-1c5e-4d3b-9a55-6f1d0f3a2b11"}, Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: "acct_0a1bc2d3e4f5g6h7"}}
	for _, c := range []struct {
		name, err string
		most      int
	}{
		{"typical", "HTTP 503 Service Unavailable", 1536},
		{"longest error", strings.Repeat("x", 2*MaxErrorLen), 4608},
	} {
		d := send.NewDelivery(ep, "0b9f1a52-1c5e-4d3b-9a55-6f1d0f3a2b11", "transcript.ready", "", "")
		firstAttemptFailed(d, time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), send.Result{StatusCode: 503, Error: c.err})
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > c.most {
			t.Errorf("%s: a retrying delivery is %d bytes of JSON; DefaultMaxLiveDeliveries assumes at most %d", c.name, len(b), c.most)
		}
		t.Logf("%s: %d bytes", c.name, len(b))
	}
}
