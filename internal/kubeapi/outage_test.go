package kubeapi_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
)

func endpoint(ns, name string) *switchboardv1alpha1.WebhookEndpoint {
	return &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: "acc_123", DisplayName: name, URL: "https://hooks.example.com/" + name,
			Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded}}}
}

// kube-apiserver frozen (SIGSTOP): reads are answered from the watched cache, the first
// within the live timeout and the others without waiting on kube-apiserver; once it runs
// again, reads are live again (an object the cache has not seen yet is found).
func TestOutageReaderReadsTheCacheWhileKubeAPIServerIsFrozen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := controlplane.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	live, err := kubeapi.NewClient(cp.Config, cp.Scheme, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "sb-outage"
	if err := live.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := live.Create(ctx, endpoint(ns, "wh-before")); err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cp.Config, cache.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informers.GetInformer(ctx, &switchboardv1alpha1.WebhookEndpoint{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	ping, err := kubeapi.NewPing(cp.Config, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := &kubeapi.OutageReader{Live: live, Cache: informers, Ping: ping, LiveTimeout: 500 * time.Millisecond, Recheck: 200 * time.Millisecond}
	names := func() []string {
		t.Helper()
		var list switchboardv1alpha1.WebhookEndpointList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatalf("list while down=%v: %v", r.Down(), err)
		}
		var out []string
		for _, ep := range list.Items {
			out = append(out, ep.Name)
		}
		return out
	}
	if got := names(); len(got) != 1 || r.Down() {
		t.Fatalf("before the freeze: %v (down %v)", got, r.Down())
	}

	resume, err := cp.FreezeAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	start := time.Now()
	if got := names(); len(got) != 1 || got[0] != "wh-before" {
		t.Fatalf("first read in the freeze: %v", got)
	}
	if took := time.Since(start); took > 2*time.Second || !r.Down() {
		t.Fatalf("first read in the freeze took %s (live timeout 500 ms), down=%v", took, r.Down())
	}
	for range 20 {
		start := time.Now()
		if got := names(); len(got) != 1 {
			t.Fatalf("read in the freeze: %v", got)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Fatalf("a read in the freeze waited %s on kube-apiserver", took)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An object the cache has not got is not found during the outage (it waits for it).
	var missing switchboardv1alpha1.WebhookEndpoint
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wh-unknown"}, &missing); err == nil {
		t.Fatal("found an endpoint that does not exist")
	}

	resume()
	resumedAt := time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for r.Down() {
		names()
		if time.Now().After(deadline) {
			t.Fatal("still reading the cache 30 s after kube-apiserver resumed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("live again %s after kube-apiserver resumed", time.Since(resumedAt).Round(time.Millisecond))
	// Live again: read-after-write holds, even before the watch event reaches the cache.
	if err := live.Create(ctx, endpoint(ns, "wh-after")); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 2 {
		t.Fatalf("right after creating a second endpoint: %v, want both", got)
	}
}
