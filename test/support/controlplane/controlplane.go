/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package controlplane starts a real kube-apiserver and etcd (the envtest binaries) with
// Switchboard's CRDs installed. Tests and `make run` (hack/localdev) both use it.
package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// Config talks to the kube-apiserver as a cluster admin (user switchboard-manager,
	// bearer token).
	Config *rest.Config
	// Scheme holds the built-in kinds and switchboard.dev/v1alpha1.
	Scheme *runtime.Scheme

	env      *envtest.Environment
	tokenDir string
}

// Start starts kube-apiserver and etcd from $KUBEBUILDER_ASSETS and installs the CRDs of
// config/crd/bases (found from the module root, so it works from any package's test).
func Start(ctx context.Context) (*Env, error) {
	return StartWith(ctx, Options{})
}

// Options are what a caller may choose about the control plane.
type Options struct {
	// EtcdDataDir is etcd's data directory, kept when the control plane stops; a directory an
	// etcd snapshot was restored into starts etcd with that state. Empty: a temporary
	// directory, removed on Stop.
	EtcdDataDir string
	// APIServerFlags are kube-apiserver flags (name without dashes → value), each replacing
	// this package's value of the same flag, e.g. to measure another watch cache setting.
	APIServerFlags map[string]string
}

// StartWith is Start with options.
func StartWith(ctx context.Context, opts Options) (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run via make test / make run, or export KUBEBUILDER_ASSETS=$(hack/envtest-binaries.sh)")
	}
	root, err := ModuleRoot()
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
	// The service's own clients authenticate with a bearer token, as a manager in a cluster
	// does with its service account token: kube-apiserver verifies a client certificate's
	// chain (an ECDSA signature check) on every request, 7 % of its CPU at 1,000 writes/s.
	tokenDir, token, err := writeTokenFile()
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(tokenDir, tokenFileName)
	te := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if opts.EtcdDataDir != "" {
		te.ControlPlane.Etcd = &envtest.Etcd{DataDir: opts.EtcdDataDir}
	}
	kas := te.ControlPlane.GetAPIServer().Configure()
	kas.Append("token-auth-file", tokenFile)
	kas.Set("watch-cache-sizes", NoWatchCacheFor)
	kas.Set("etcd-compaction-interval", EtcdCompactionInterval)
	for name, value := range opts.APIServerFlags {
		kas.Set(name, value)
	}
	certCfg, err := startWithGOGC(te, ControlPlaneGOGC)
	if err != nil {
		_ = te.Stop()
		_ = os.RemoveAll(tokenDir)
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	cfg := &rest.Config{Host: certCfg.Host, APIPath: certCfg.APIPath, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: certCfg.CAData}, QPS: certCfg.QPS, Burst: certCfg.Burst}
	return &Env{Config: cfg, Scheme: scheme, env: te, tokenDir: tokenDir}, nil
}

const tokenFileName = "tokens.csv"

// Tuning of the control plane this package starts for the webhook delivery load, measured in
// docs/benchmarks.md (the same settings suit a cluster of your own; see docs/operations.md).
const (
	// NoWatchCacheFor turns kube-apiserver's watch cache off for WebhookDeliveries: they live
	// well under a second and one client watches them (the manager), so the cache is a second
	// copy of every create and delete that nothing reads: 10-20 % of kube-apiserver's CPU.
	NoWatchCacheFor = "webhookdeliveries.switchboard.dev#0"
	// ControlPlaneGOGC is the garbage collector target of kube-apiserver and etcd: with the
	// default (100) garbage collection is 14-18 % of kube-apiserver's CPU at 500 writes/s,
	// for a heap of tens of MiB. An operator's own GOGC in the environment is kept.
	ControlPlaneGOGC = "400"
	// EtcdCompactionInterval is how often kube-apiserver compacts etcd's history (default
	// 5m): every delivery leaves two revisions, and until they are compacted etcd walks
	// them on every range, so after a burst of 50,000 deliveries the next minutes ran slower.
	EtcdCompactionInterval = "1m"
)

// startWithGOGC starts te's processes with GOGC=gogc in their environment (they inherit this
// process's environment; envtest has no other way in) unless GOGC is already set.
func startWithGOGC(te *envtest.Environment, gogc string) (*rest.Config, error) {
	if _, set := os.LookupEnv("GOGC"); !set {
		if err := os.Setenv("GOGC", gogc); err != nil {
			return nil, err
		}
		defer func() { _ = os.Unsetenv("GOGC") }()
	}
	return te.Start()
}

// writeTokenFile writes kube-apiserver's static token file (one cluster-admin user,
// switchboard-manager, with a fresh random token) into a new private directory.
func writeTokenFile() (dir, token string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	dir, err = os.MkdirTemp("", "switchboard-controlplane-")
	if err != nil {
		return "", "", err
	}
	line := token + `,switchboard-manager,switchboard-manager,"system:masters"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, tokenFileName), []byte(line), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", err
	}
	return dir, token, nil
}

// EtcdURL is etcd's client URL (plain HTTP on loopback), for etcdctl.
func (e *Env) EtcdURL() string {
	return e.env.ControlPlane.Etcd.URL.String()
}

// Stop stops kube-apiserver and etcd and removes their data (not an EtcdDataDir of Options).
func (e *Env) Stop() error {
	err := e.env.Stop()
	return errors.Join(err, os.RemoveAll(e.tokenDir))
}

// WriteKubeconfig writes a kubeconfig for a system:masters user to path (mode 0600), for
// kubectl against the running control plane.
func (e *Env) WriteKubeconfig(path string) error {
	base := rest.CopyConfig(e.Config)
	base.BearerToken = "" // kubectl's user has its own client certificate
	u, err := e.env.AddUser(envtest.User{Name: "switchboard-admin", Groups: []string{"system:masters"}}, base)
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

// ModuleRoot walks up from the working directory to the directory holding go.mod (tests
// run in their package's directory).
func ModuleRoot() (string, error) {
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
