// Command localdev is what `make run` runs: the whole service on this machine with a real
// kube-apiserver and etcd (the envtest binaries), a throwaway PostgreSQL cluster, the
// controller manager, the v1 API on 127.0.0.1:8080, metrics on 127.0.0.1:8082 and a seeded demo account.
// Its emails go to the development outbox (an SMTP server in this process that keeps them for
// /portal/dev/outbox), and webhook endpoints may be on this machine. Ctrl-C stops everything it started.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
	"github.com/switchboard-dev/switchboard/internal/devoutbox/smtpd"
	"github.com/switchboard-dev/switchboard/internal/portal"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
)

const (
	apiAddr      = "127.0.0.1:8080"
	platformAddr = "127.0.0.1:8081"
	// metricsAddr is plain HTTP on loopback: nothing off this machine can reach it.
	metricsAddr = "127.0.0.1:8082"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := zap.New(zap.UseDevMode(false))
	ctrl.SetLogger(log)
	step := func(msg string) { fmt.Fprintln(os.Stderr, "==>", msg) }

	cacheDir := os.Getenv("SWITCHBOARD_CACHE")
	if cacheDir == "" {
		home, _ := os.UserHomeDir()
		cacheDir = filepath.Join(home, ".cache", "switchboard")
	}
	runDir := filepath.Join(cacheDir, "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}

	step("starting kube-apiserver and etcd")
	cp, err := controlplane.Start(ctx)
	if err != nil {
		return err
	}
	defer func() { step("stopping kube-apiserver and etcd"); _ = cp.Stop() }()
	kubeconfig := filepath.Join(runDir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	step("starting PostgreSQL")
	pg, err := pgcluster.Start(ctx)
	if err != nil {
		return err
	}
	defer func() { step("stopping PostgreSQL"); _ = pg.Stop() }()
	if err := pg.CreateDatabase(ctx, "switchboard", ""); err != nil {
		return err
	}
	dbURL := pg.URL("switchboard")
	if _, err := store.Migrate(ctx, dbURL); err != nil {
		return err
	}

	step("seeding the demo account")
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	recordingsDir := filepath.Join(runDir, "recordings")
	if err := os.RemoveAll(recordingsDir); err != nil {
		return err
	}
	recordings, err := recordingstore.NewLocal(recordingsDir)
	if err != nil {
		return err
	}
	demo, err := seed.Demo(ctx, st, seed.DemoOptions{Clock: clock.RealClock{}, Recordings: recordings, Progress: os.Stderr})
	var signIn string
	if err == nil {
		signIn, err = demoSignInLink(ctx, st, demo.OwnerEmail)
	}
	st.Close()
	_ = recordings.Close()
	if err != nil {
		return err
	}
	// A fresh signing key and platform token per run: links from an earlier run stop working.
	signingKey := make([]byte, 32)
	if _, err := rand.Read(signingKey); err != nil {
		return err
	}
	platformToken := rand.Text()
	realtimeSecret := []byte(rand.Text())

	// The service's emails (sign-in links, invitations, switch-off notices) stay on this machine.
	outbox := devoutbox.New(devoutbox.DefaultKeep, clock.RealClock{})
	mailServer, err := smtpd.Start("127.0.0.1:0", outbox)
	if err != nil {
		return err
	}
	defer func() { _ = mailServer.Close() }()

	step("starting the controller manager and the API")
	return serve.Run(ctx, serve.Options{
		DatabaseURL:       dbURL,
		APIAddr:           apiAddr,
		PublicBaseURL:     "http://" + apiAddr,
		MetricsAddr:       metricsAddr,
		ProbeAddr:         "127.0.0.1:8083",
		LeaderElection:    false, // one instance: no election (the process warns so)
		RequestsPerMinute: 60,
		RestConfig:        cp.Config,
		Clock:             clock.RealClock{},
		Log:               log,
		Recordings:        recordingstore.Config{Backend: recordingstore.BackendLocal, Dir: recordingsDir},
		LinkSigningKey:    signingKey,
		PlatformAddr:      platformAddr,
		PlatformToken:     platformToken,
		Realtime:          serve.RealtimeOptions{AppKey: "switchboard", Secret: realtimeSecret},
		Portal:            serve.PortalOptions{DevOutbox: outbox},
		Webhooks: serve.WebhookOptions{SMTPAddr: mailServer.Addr(), MailFrom: "switchboard@localhost",
			// Receivers on this machine; a self-signed one is trusted through this file.
			AllowPrivateTargets: true, CAFile: os.Getenv("SWITCHBOARD_WEBHOOK_CA_FILE")},
		Ready: func() {
			banner(demo.OwnerKey, kubeconfig, dbURL, platformToken)
			portalBanner(signIn, demo.OwnerEmail, dbURL)
			devBanner(mailServer.Addr(), demo.OwnerKey)
			realtimeBanner(demo.OwnerKey)
		},
	})
}

func banner(key, kubeconfig, dbURL, platformToken string) {
	base := "http://" + apiAddr + "/v1"
	fmt.Printf(`
Switchboard is running. Press Ctrl-C to stop everything.

  API         %[1]s
  Demo key    %[2]s
  Kubeconfig  %[3]s
  Database    %[4]s
  Metrics     http://%[7]s/metrics

Try:
  curl -s -H "Authorization: Bearer %[2]s" %[1]s/me
  curl -s -H "Authorization: Bearer %[2]s" "%[1]s/calls?per_page=5"
  kubectl --kubeconfig %[3]s get webhookendpoints,webhookdeliveries,transcriptionjobs -A

Live traffic (calls, voicemails, texts through the platform ingestion API on %[6]s):
  SWITCHBOARD_PLATFORM_TOKEN=%[5]s go run . simulate --rate 0.5

`, base, key, kubeconfig, dbURL, platformToken, platformAddr, metricsAddr)
}

// demoSignInLink mints the demo owner's one-time sign-in link to the portal, as
// `switchboard admin portal-link` does.
func demoSignInLink(ctx context.Context, st *store.Store, email string) (string, error) {
	users, err := st.UsersByEmail(ctx, email)
	if err != nil || len(users) == 0 {
		return "", fmt.Errorf("find the demo owner: %v", err)
	}
	return portal.SignInLink(ctx, st, time.Now(), portal.DefaultLinkTTL, "http://"+apiAddr, users[0].ID, "")
}

func portalBanner(link, email, dbURL string) {
	fmt.Printf(`Account portal (the demo owner, %[2]s; the link works once, for 15 minutes):
  %[1]s
Another link:
  go run . admin portal-link --database-url '%[3]s' --email %[2]s

`, link, email, dbURL)
}

// devBanner says what `make run` allows that serve does not: mail kept on this machine and
// webhook endpoints on it.
func devBanner(smtpAddr, key string) {
	fmt.Printf(`Development outbox (e-mails were not sent: sign-in links, invitations; SMTP on %[2]s):
  http://%[1]s/portal/dev/outbox

Webhooks may target this machine (development only):
  endpoints on loopback and private addresses are allowed, e.g. https://127.0.0.1:3000/hooks
  (a self-signed receiver: start make run with SWITCHBOARD_WEBHOOK_CA_FILE=its-cert.pem);
  plain HTTP: go run . listen --api-base http://%[1]s/v1 --key %[3]s --forward-to http://localhost:3000/hooks

`, apiAddr, smtpAddr, key)
}
