package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/cli"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

// runAsSwitchboard makes the test binary behave as the switchboard binary (main.go), so
// serve runs as its own process, with its own flags, signals and exit status.
const runAsSwitchboard = "SWITCHBOARD_TEST_RUN_AS_SWITCHBOARD"

func switchboardMain() int {
	if err := cli.NewRootCommand().Execute(); err != nil {
		return 1
	}
	return 0
}

// docs/operations.md "Deploy / From parts": a kube-apiserver with the CRDs, a PostgreSQL database, the
// secrets in the environment and `switchboard serve` with the flags shown there.
func TestServeFromParts(t *testing.T) {
	ctx := context.Background()
	cp := testenv.ControlPlane(t)
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	api, platform, metrics, probes := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	args := []string{"serve", "--kubeconfig", kubeconfig, "--public-base-url", "https://api.example.com",
		"--api-bind-address", api, "--platform-bind-address", platform,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes,
		"--recordings-dir", filepath.Join(home, "recordings"), "--smtp-addr", "127.0.0.1:25"}
	// Outside a pod, leader election needs its namespace named; until serve has that flag
	// (issue 12's leader-election work) this process runs alone without an election.
	electing := findServe(t).Flags().Lookup("leader-election-namespace") != nil
	if electing {
		args = append(args, "--leader-elect=true", "--leader-election-namespace=default")
	} else {
		args = append(args, "--leader-elect=false")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{runAsSwitchboard + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"DATABASE_URL=" + storetest.NewDatabaseURL(t),
		"SWITCHBOARD_LINK_SIGNING_KEY=" + strings.Repeat("s", 48),
		"SWITCHBOARD_PLATFORM_TOKEN=platform-token"}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("serve after kill: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", logs.String())
		}
	})

	plain := &http.Client{Timeout: 5 * time.Second}
	status := func(c *http.Client, url, token string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(2 * time.Minute)
	for status(plain, "http://"+probes+"/readyz", "") != http.StatusOK {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("serve exited before it was ready: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 2 minutes")
		}
	}

	if got := status(plain, "http://"+probes+"/healthz", ""); got != http.StatusOK {
		t.Errorf("/healthz: %d", got)
	}
	if got := status(plain, "http://"+api+"/v1/me", ""); got != http.StatusUnauthorized {
		t.Errorf("public API without a key: %d, want 401", got)
	}
	if got := status(plain, "http://"+platform+"/platform/v1/numbers", "platform-token"); got != http.StatusOK {
		t.Errorf("platform API with its token: %d, want 200", got)
	}
	if got := status(plain, "http://"+api+"/platform/v1/numbers", "platform-token"); got == http.StatusOK {
		t.Error("the platform API answers on the public port")
	}
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	// The metrics server makes its self-signed certificate (RSA keys) as it starts, which on
	// a loaded machine can end after /readyz first answers.
	for status(secure, "https://"+metrics+"/metrics", "") == 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	if got := status(secure, "https://"+metrics+"/metrics", ""); got != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d, want 401", got)
	}
	if got := status(secure, "https://"+metrics+"/metrics", cp.Config.BearerToken); got != http.StatusOK {
		t.Errorf("metrics with a cluster admin's token: %d, want 200", got)
	}
	if electing {
		c := testenv.Client(t, cp)
		lease := &coordinationv1.Lease{}
		for {
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "switchboard-controller-manager.switchboard.dev"}, lease)
			if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no leader lease: %v %+v", err, lease.Spec)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	// A rolling update's SIGTERM: serve stops cleanly, status 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(45 * time.Second):
		t.Error("serve still running 45 s after SIGTERM")
	}
}
