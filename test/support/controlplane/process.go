package controlplane

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// APIServerPID finds this control plane's kube-apiserver process by its --secure-port, for
// fault tests that freeze it (SIGSTOP) and let it run again (SIGCONT).
func (e *Env) APIServerPID() (int, error) {
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	// Other control planes on the machine may have been given the same port on another
	// address; the certificate directory is this one's own.
	certDir := ""
	if e.env != nil && e.env.ControlPlane.APIServer != nil {
		certDir = e.env.ControlPlane.APIServer.CertDir
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasSuffix(args[0], "kube-apiserver") {
			continue
		}
		if !slices.Contains(args, "--secure-port="+port) || certDir != "" && !slices.Contains(args, "--cert-dir="+certDir) {
			continue
		}
		return strconv.Atoi(ent.Name())
	}
	return 0, fmt.Errorf("no kube-apiserver process with --secure-port=%s", port)
}

// FreezeAPIServer stops kube-apiserver (SIGSTOP): it keeps its connections and answers
// nothing, as a hung or paused one. The returned resume (SIGCONT) is safe to call twice.
func (e *Env) FreezeAPIServer() (resume func(), err error) {
	pid, err := e.APIServerPID()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	resumed := false
	return func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}, nil
}
