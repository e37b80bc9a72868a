/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestStartWithoutAssetsSaysWhatToDo(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	_, err := Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "hack/envtest-binaries.sh") {
		t.Fatalf("want an error pointing at hack/envtest-binaries.sh, got %v", err)
	}
}

func TestModuleRootFromASubdirectory(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "config", "crd", "bases")); err != nil {
		t.Fatalf("module root %s has no config/crd/bases: %v", root, err)
	}
}

// The service's clients authenticate with a bearer token (no client certificate to verify
// on every request); kubectl's kubeconfig has a certificate user of its own. Stop removes
// the token file.
func TestStartInstallsCRDsAndWritesAWorkingKubeconfig(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS not set; run via make test")
	}
	ctx := context.Background()
	env, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	if env.Config.BearerToken == "" || len(env.Config.CertData) > 0 {
		t.Fatal("service config: want a bearer token and no client certificate")
	}
	if got := whoami(t, env.Config); got != "switchboard-manager" {
		t.Errorf("service user = %q, want switchboard-manager", got)
	}

	// The delivery tuning reaches the processes, and GOGC does not stay in this one's environment.
	for _, name := range []string{"kube-apiserver", "etcd"} {
		env := childEnviron(t, name)
		if !slices.Contains(env, "GOGC="+ControlPlaneGOGC) {
			t.Errorf("%s runs without GOGC=%s", name, ControlPlaneGOGC)
		}
	}
	args := childCmdline(t, "kube-apiserver")
	for _, want := range []string{"--watch-cache-sizes=" + NoWatchCacheFor, "--etcd-compaction-interval=" + EtcdCompactionInterval} {
		if !slices.Contains(args, want) {
			t.Errorf("kube-apiserver runs with %q, want %s", args, want)
		}
	}
	if _, set := os.LookupEnv("GOGC"); set {
		t.Error("GOGC left set in this process's environment")
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || len(cfg.CertData) == 0 {
		t.Fatal("kubeconfig: want a client certificate and no token")
	}
	if got := whoami(t, cfg); got != "switchboard-admin" {
		t.Errorf("kubectl user = %q, want switchboard-admin", got)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var list switchboardv1alpha1.WebhookEndpointList
	if err := c.List(ctx, &list); err != nil {
		t.Fatalf("list WebhookEndpoints through the written kubeconfig: %v", err)
	}

	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(env.tokenDir); !os.IsNotExist(err) {
		t.Errorf("token directory %s still there after Stop (%v)", env.tokenDir, err)
	}
}

// childProc is the /proc directory of this process's child named name.
func childProc(t *testing.T, name string) string {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, pid := range strings.Fields(string(b)) {
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				return "/proc/" + pid
			}
		}
	}
	t.Fatalf("no child process %s", name)
	return ""
}

func childEnviron(t *testing.T, name string) []string {
	b, err := os.ReadFile(childProc(t, name) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\x00")
}

func childCmdline(t *testing.T, name string) []string {
	b, err := os.ReadFile(childProc(t, name) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\x00")
}

// whoami is the user name kube-apiserver authenticates cfg as.
func whoami(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status.UserInfo.Username
}

// A flag of Options replaces the package's own, and kube-apiserver applies it: here its watch
// cache is off for Secrets (and, with the package's value replaced, on for WebhookDeliveries).
func TestStartWithAPIServerFlags(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS not set; run via make test")
	}
	ctx := context.Background()
	env, err := StartWith(ctx, Options{APIServerFlags: map[string]string{"watch-cache-sizes": "secrets#0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	args := childCmdline(t, "kube-apiserver")
	if !slices.Contains(args, "--watch-cache-sizes=secrets#0") || slices.Contains(args, "--watch-cache-sizes="+NoWatchCacheFor) {
		t.Fatalf("kube-apiserver runs with %q, want --watch-cache-sizes=secrets#0 alone", args)
	}
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	d := &switchboardv1alpha1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
		Spec: switchboardv1alpha1.WebhookDeliverySpec{AccountID: "acct_1", EndpointName: "whep-1",
			EventID: "8f0c3f2e-7d3b-4a53-9f55-6c1b8e0e2a11", EventType: switchboardv1alpha1.EventCallEnded}}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cached := func() (secrets, deliveries bool) {
		resp, err := hc.Get(strings.TrimRight(env.Config.Host, "/") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(line, "apiserver_watch_cache_events_received_total{") {
				continue
			}
			secrets = secrets || strings.Contains(line, `resource="secrets"`)
			deliveries = deliveries || strings.Contains(line, `resource="webhookdeliveries"`)
		}
		return secrets, deliveries
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, deliveries := cached(); deliveries {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the WebhookDelivery never reached kube-apiserver's watch cache, the package's setting still in force")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The Secret was made first; a cache for it would have had as long and a second more.
	time.Sleep(time.Second)
	if secrets, _ := cached(); secrets {
		t.Fatal("kube-apiserver's watch cache received Secrets with --watch-cache-sizes=secrets#0")
	}
}
