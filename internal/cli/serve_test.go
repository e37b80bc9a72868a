package cli

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runAsSwitchboard makes the test binary behave as the switchboard binary (main.go), so the
// tests below run serve as a real process: its stderr and exit status are what an operator sees.
const runAsSwitchboard = "SWITCHBOARD_TEST_RUN_AS_SWITCHBOARD"

func switchboardMain() int {
	if err := NewRootCommand().Execute(); err != nil {
		return 1
	}
	return 0
}

// serveProcess runs `switchboard serve args...` with exactly env and returns its stderr
// and exit status.
func serveProcess(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append([]string{runAsSwitchboard + "=1", "PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("serve %v did not fail: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("serve printed on stdout: %q", stdout.String())
	}
	return stderr.String(), exit.ExitCode()
}

// fakeKubeconfig names an API server that is never contacted: serve must stop before.
func fakeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// unwritableDir is a directory this process cannot create files in; root ignores
// permission bits, so it gets sysfs, which takes no new files from anyone.
func unwritableDir(t *testing.T) string {
	if os.Geteuid() == 0 {
		return "/sys"
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	return dir
}

func TestServeFailsFastWithOneLine(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	home := t.TempDir() // no ~/.kube/config
	kubeconfig := "KUBECONFIG=" + fakeKubeconfig(t)
	db := "DATABASE_URL=postgres://switchboard@127.0.0.1:1/switchboard" // never dialled
	key := "SWITCHBOARD_LINK_SIGNING_KEY=" + strings.Repeat("k", 32)
	recordings := "--recordings-dir=" + t.TempDir()
	free := "--api-bind-address=127.0.0.1:0"
	noDir := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(noDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := unwritableDir(t)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		line string // the whole of stderr, one line
	}{
		{"no kubeconfig", []string{"HOME=" + home, db, key}, []string{recordings, free},
			"Error: no kube-apiserver configured: pass --kubeconfig, set KUBECONFIG, put one in ~/.kube/config, or run in a pod with a service account"},
		{"kubeconfig file missing", []string{"HOME=" + home, db, key}, []string{recordings, free, "--kubeconfig=" + filepath.Join(home, "missing")},
			"Error: load the kubeconfig: stat " + filepath.Join(home, "missing") + ": no such file or directory"},
		{"no database URL", []string{"HOME=" + home, kubeconfig, key}, []string{recordings, free},
			"Error: no database: set --database-url or DATABASE_URL"},
		{"no link signing key", []string{"HOME=" + home, kubeconfig, db}, []string{recordings, free},
			"Error: the recording link signing key must be at least 32 bytes: set --link-signing-key-file or SWITCHBOARD_LINK_SIGNING_KEY"},
		{"short link signing key", []string{"HOME=" + home, kubeconfig, db, "SWITCHBOARD_LINK_SIGNING_KEY=short"}, []string{recordings, free},
			"Error: the recording link signing key must be at least 32 bytes: set --link-signing-key-file or SWITCHBOARD_LINK_SIGNING_KEY"},
		{"unreadable link signing key file", []string{"HOME=" + home, kubeconfig, db}, []string{recordings, free, "--link-signing-key-file=" + filepath.Join(home, "missing")},
			"Error: read the link signing key: open " + filepath.Join(home, "missing") + ": no such file or directory"},
		{"recordings directory not creatable", []string{"HOME=" + home, kubeconfig, db, key}, []string{"--recordings-dir=" + filepath.Join(noDir, "recordings"), free},
			"Error: the recordings directory " + filepath.Join(noDir, "recordings") + " cannot be used (--recordings-dir): not a directory"},
		{"recordings directory not writable", []string{"HOME=" + home, kubeconfig, db, key}, []string{"--recordings-dir=" + readOnly, free},
			"Error: the recordings directory " + readOnly + " is not writable (--recordings-dir): "},
		{"API port taken", []string{"HOME=" + home, kubeconfig, db, key}, []string{recordings, "--api-bind-address=" + taken.Addr().String()},
			"Error: cannot listen for the v1 API on " + taken.Addr().String() + " (--api-bind-address): address already in use"},
		{"platform port taken", []string{"HOME=" + home, kubeconfig, db, key, "SWITCHBOARD_PLATFORM_TOKEN=p"}, []string{recordings, free, "--platform-bind-address=" + taken.Addr().String()},
			"Error: cannot listen for the platform ingestion API on " + taken.Addr().String() + " (--platform-bind-address): address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, status := serveProcess(t, tc.env, tc.args...)
			if status != 1 {
				t.Errorf("exit status %d, want 1", status)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			// The unwritable case ends with the system's reason, which differs by file system.
			if got := strings.TrimSuffix(stderr, "\n"); got != tc.line && (!strings.HasSuffix(tc.line, ": ") || !strings.HasPrefix(got, tc.line)) {
				t.Errorf("stderr\n got %q\nwant %q", got, tc.line)
			}
		})
	}
}

// serve refuses webhook endpoints on private addresses unless the operator sets the flag, and
// offers no way to turn on the development outbox (only `make run` does, in hack/localdev).
func TestServeDefaultsAreForProduction(t *testing.T) {
	var serve *cobra.Command
	for _, c := range NewRootCommand().Commands() {
		if c.Name() == "serve" {
			serve = c
		}
	}
	if serve == nil {
		t.Fatal("no serve command")
	}
	f := serve.Flags().Lookup("webhook-allow-private-targets")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("--webhook-allow-private-targets: %+v, want a flag defaulting to false", f)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if strings.Contains(f.Name, "outbox") {
			t.Errorf("serve has the flag --%s: the development outbox is for make run only", f.Name)
		}
	})
}
