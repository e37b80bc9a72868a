// Command controlplane starts the tests' kube-apiserver and etcd (internal/controlplane,
// CRDs installed), writes a kubeconfig with its cluster-admin token and its CA into the
// directory given, and runs until SIGTERM or SIGINT. hack/node/up.sh runs it.
package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/switchboard-dev/switchboard/internal/controlplane"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	cp, err := controlplane.Start(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), cp.Config.CAData, 0o644); err != nil {
		return err
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: %s, certificate-authority-data: %s}
users:
- name: admin
  user: {token: %s}
contexts:
- name: node
  context: {cluster: node, user: admin}
current-context: node
`, cp.Config.Host, base64.StdEncoding.EncodeToString(cp.Config.CAData), cp.Config.BearerToken)
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kc), 0o600); err != nil {
		return err
	}
	fmt.Println("ready", cp.Config.Host)
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
	return nil
}
