/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "config", "crd", "bases")); err != nil {
		t.Fatalf("module root %s has no config/crd/bases: %v", root, err)
	}
}

func TestStartInstallsCRDsAndWritesAWorkingKubeconfig(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS not set; run via make test")
	}
	ctx := context.Background()
	env, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var list switchboardv1alpha1.WebhookEndpointList
	if err := c.List(ctx, &list); err != nil {
		t.Fatalf("list WebhookEndpoints through the written kubeconfig: %v", err)
	}
}
