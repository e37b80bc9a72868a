/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package controlplane starts a real kube-apiserver and etcd (the envtest binaries) with
// Switchboard's CRDs installed. Tests and `make run` (hack/localdev) both use it.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	// Config talks to the kube-apiserver as a cluster admin.
	Config *rest.Config
	// Scheme holds the built-in kinds and switchboard.dev/v1alpha1.
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// Start starts kube-apiserver and etcd from $KUBEBUILDER_ASSETS and installs the CRDs of
// config/crd/bases (found from the module root, so it works from any package's test).
func Start(ctx context.Context) (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run via make test / make run, or export KUBEBUILDER_ASSETS=$(hack/envtest-binaries.sh)")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := switchboardv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &Env{Config: cfg, Scheme: scheme, env: te}, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// WriteKubeconfig writes a kubeconfig for a system:masters user to path (mode 0600), for
// kubectl against the running control plane.
func (e *Env) WriteKubeconfig(path string) error {
	u, err := e.env.AddUser(envtest.User{Name: "switchboard-admin", Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		return fmt.Errorf("add kubeconfig user: %w", err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find config/crd/bases: no go.mod in the working directory or above it")
		}
		dir = parent
	}
}
