/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

var (
	// ctx lives for the whole suite; it stops the manager when cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	cp *controlplane.Env
	// k8sClient talks to the kube-apiserver directly (no cache): what a test writes it can
	// read back at once.
	k8sClient client.Client
	// mgr is the controller manager; controllers are registered on it before it starts.
	mgr          ctrl.Manager
	apiextClient apiextensionsclientset.Interface
	discoveryC   discovery.DiscoveryInterface
	mgrStopped   chan struct{}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	ctx, cancel = context.WithCancel(context.Background())

	By("starting kube-apiserver and etcd with the CRDs installed")
	// Stopped after AfterSuite (DeferCleanup from BeforeSuite), once the manager has stopped.
	cp = testenv.ControlPlane(GinkgoT())
	k8sClient = testenv.Client(GinkgoT(), cp)
	var err error
	apiextClient, err = apiextensionsclientset.NewForConfig(cp.Config)
	Expect(err).NotTo(HaveOccurred())
	discoveryC, err = discovery.NewDiscoveryClientForConfig(cp.Config)
	Expect(err).NotTo(HaveOccurred())

	By("starting the controller manager")
	mgr, err = ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(),
		Controller:             testControllers,
	})
	Expect(err).NotTo(HaveOccurred())
	// Reconcilers are set up here, e.g. (&WebhookEndpointReconciler{...}).SetupWithManager(mgr).
	setupTranscriptionJobs(mgr)

	mgrStopped = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(mgrStopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if mgrStopped != nil {
		Eventually(mgrStopped).WithTimeout(time.Minute).Should(BeClosed())
	}
	// PostgreSQL, when a spec started it (the webhook specs do).
	storetest.Shutdown()
})

// newNamespace creates a fresh namespace for one test, labelled like an account's, and
// deletes it when the test ends. Returns its name.
func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "sb-test-",
		Labels:       map[string]string{switchboardv1alpha1.AccountLabel: "test"},
	}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// kubeEventsAbout lists the Kubernetes Events (events.k8s.io/v1) regarding obj.
func kubeEventsAbout(g Gomega, obj client.Object) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == obj.GetName() && ev.Regarding.UID == obj.GetUID() {
			out = append(out, ev)
		}
	}
	return out
}

// eventReasons are the reasons of the Kubernetes Events regarding obj.
func eventReasons(g Gomega, obj client.Object) []string {
	var out []string
	for _, ev := range kubeEventsAbout(g, obj) {
		out = append(out, ev.Reason)
	}
	return out
}

// testControllers is the controller settings of the tests' managers: each test starts a new
// manager with the same controllers, and controller names are unique per process unless
// name validation is skipped (as each leader term does, see internal/serve).
var testControllers = config.Controller{SkipNameValidation: ptr.To(true)}
