// Package testenv starts what a test of more than one part needs, one way for every suite: a
// real kube-apiserver and etcd with the CRDs (test/support/controlplane), an uncached client for
// them, and a throwaway, migrated PostgreSQL database (test/support/storetest). Everything it
// starts is stopped when the test (or, under Ginkgo's BeforeSuite, the suite) ends.
package testenv

import (
	"context"
	"net"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/freeport"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// TB is the part of testing.TB (and GinkgoT()) used here.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Env is a running control plane, a client for it and a database with a store open on it.
type Env struct {
	ControlPlane *controlplane.Env
	// Kube talks to the kube-apiserver directly (no cache): what a test writes it reads back at once.
	Kube client.Client
	// DatabaseURL is the test's own database, for a process or serve.Run that opens its own pool.
	DatabaseURL string
	// Store is open on DatabaseURL.
	Store *store.Store
}

// Start starts a control plane, a client and a database for one test.
func Start(tb TB) *Env {
	tb.Helper()
	cp := ControlPlane(tb)
	url := storetest.NewDatabaseURL(tb)
	st := storetest.Open(tb, url)
	return &Env{ControlPlane: cp, Kube: Client(tb, cp), DatabaseURL: url, Store: st}
}

// ControlPlane starts kube-apiserver and etcd with the CRDs installed (KUBEBUILDER_ASSETS must
// be set) and stops them when the test ends.
func ControlPlane(tb TB) *controlplane.Env {
	tb.Helper()
	cp, err := controlplane.Start(context.Background())
	if err != nil {
		tb.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	// A failed stop leaves processes behind but says nothing about the test.
	tb.Cleanup(func() { _ = cp.Stop() })
	return cp
}

// Client is an uncached client for cp with its scheme.
func Client(tb TB, cp *controlplane.Env) client.Client {
	tb.Helper()
	c, err := client.New(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		tb.Fatalf("kube client: %v", err)
	}
	return c
}

// FreeAddr is a loopback address with a port free just now, for a listener the test starts
// by address (a flag, serve.Options).
func FreeAddr(tb TB) string {
	tb.Helper()
	port, err := freeport.Get()
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
