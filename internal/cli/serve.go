package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/portal"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/retention"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
)

func newServeCommand() *cobra.Command {
	var o app.Options
	var linkKeyFile, realtimeSecretFile string
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the controllers and the public v1 API",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := zap.New(zap.UseFlagOptions(&zapOpts))
			ctrl.SetLogger(log)
			cfg, err := kubeConfig()
			if err != nil {
				return err
			}
			key, err := linkSigningKey(linkKeyFile)
			if err != nil {
				return err
			}
			o.LinkSigningKey = key
			if o.Realtime.Secret, err = realtimeSecret(realtimeSecretFile); err != nil {
				return err
			}
			o.PlatformToken = os.Getenv("SWITCHBOARD_PLATFORM_TOKEN")
			o.Transcription.SpeechAPIKey = os.Getenv("SWITCHBOARD_SPEECH_API_KEY")
			o.Transcription.SummaryAPIKey = os.Getenv("SWITCHBOARD_SUMMARY_API_KEY")
			o.Recordings.S3.AccessKey = os.Getenv("SWITCHBOARD_S3_ACCESS_KEY")
			o.Recordings.S3.SecretKey = os.Getenv("SWITCHBOARD_S3_SECRET_KEY")
			o.RestConfig = cfg
			o.Log = log
			o.Clock = clock.RealClock{}
			if o.Webhooks.StopGrace == 0 {
				o.Webhooks.StopGrace = -1 // the flag's 0: none (the option's 0 is the default)
			}
			return app.Run(ctrl.SetupSignalHandler(), o)
		},
	}
	databaseURLFlag(cmd, &o.DatabaseURL)
	f := cmd.Flags()
	// controller-runtime's --kubeconfig lives on Go's global flag set; the zap logging flags get their own.
	logFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	f.AddGoFlagSet(logFlags)
	f.AddGoFlagSet(flag.CommandLine)
	f.StringVar(&o.APIAddr, "api-bind-address", ":8080", "address of the public v1 API")
	f.StringVar(&o.PublicBaseURL, "public-base-url", "", "origin clients use to reach the API, for links (default http://<api-bind-address>)")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "address of the metrics endpoint (0 to disable)")
	f.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS to callers the kube-apiserver authenticates and authorizes for GET /metrics (false: plain HTTP, anyone who can connect)")
	f.StringVar(&o.MetricsCertDir, "metrics-cert-path", "", "directory of tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8083", "address of /healthz and /readyz")
	f.BoolVar(&o.Pprof, "pprof", false, "serve Go's profiles at /debug/pprof/ on the health-probe address (for diagnosis: they show the process's internals, so keep that address private)")
	f.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so only one replica runs the controllers (retries, pause, resend, switch-off); first attempts run on every replica (false: a single instance only)")
	leaderElectionFlags(f, &o)
	f.IntVar(&o.RequestsPerMinute, "requests-per-minute", 60, "per-user API request limit (the spec's 60; raise for benchmarks)")
	f.StringVar(&o.PlatformAddr, "platform-bind-address", ingest.DefaultAddr, "address of the internal ingestion API for the telephony platform (token from $SWITCHBOARD_PLATFORM_TOKEN; off without one)")
	f.DurationVar(&o.HTTPTimeouts.ReadHeader, "http-read-header-timeout", app.DefaultReadHeaderTimeout, "time a client has to send a request's headers (public and platform listeners)")
	f.DurationVar(&o.HTTPTimeouts.Read, "http-read-timeout", app.DefaultReadTimeout, "time a client has to send a whole request, body included, to the public API")
	f.IntVar(&o.PlatformCallBatchSize, "platform-call-batch-size", ingest.DefaultCallBatchSize, "most call reports the ingestion API records in one transaction (reports that arrive together share one)")
	f.IntVar(&o.PlatformCallBatches, "platform-call-batches", ingest.DefaultCallBatchesAtOnce, "how many of those transactions of call reports run at once")
	f.DurationVar(&o.PlatformReadTimeout, "platform-read-timeout", app.DefaultPlatformReadTimeout, "time the platform has to send a whole report, audio included, to the ingestion API")
	f.DurationVar(&o.HTTPTimeouts.Write, "http-write-timeout", app.DefaultWriteTimeout, "time to write a response once the request is read (recording audio extends it per chunk)")
	f.DurationVar(&o.HTTPTimeouts.Idle, "http-idle-timeout", app.DefaultIdleTimeout, "time a keep-alive connection may wait for its next request")
	f.StringVar(&o.DashboardURL, "dashboard-url", "", "address of the web app, for links.dashboard in webhook events: a call is at <dashboard-url>/calls/<id> (default <public-base-url>/portal, the account portal)")
	f.DurationVar(&o.Portal.IdleTimeout, "portal-idle-timeout", portal.DefaultIdleTimeout, "the account portal signs out a session unused this long")
	f.DurationVar(&o.Portal.Lifetime, "portal-session-lifetime", portal.DefaultLifetime, "the account portal signs out every session this long after sign-in")
	f.StringVar(&o.Webhooks.SMTPAddr, "smtp-addr", "", "SMTP relay (host:port) for the portal's sign-in links and for emails to account owners when a webhook endpoint is switched off")
	f.StringVar(&o.Webhooks.MailFrom, "mail-from", "webhooks@switchboard.dev", "sender address of those emails")
	f.BoolVar(&o.Webhooks.AllowPrivateTargets, "webhook-allow-private-targets", false, "allow webhook endpoints on loopback and private addresses (local development only; never in production)")
	f.StringVar(&o.Webhooks.CAFile, "webhook-ca-file", "", "PEM file of extra certificate authorities trusted for webhook endpoints")
	f.DurationVar(&o.Webhooks.Timeout, "webhook-timeout", 10*time.Second, "how long an endpoint has to answer an attempt (the spec's 10s)")
	f.IntVar(&o.Webhooks.MaxConcurrentDeliveries, "webhook-concurrency", 64, "delivery attempts in flight at once")
	f.IntVar(&o.Webhooks.PerEndpoint, "webhook-per-endpoint", 8, "delivery attempts in flight to one endpoint at once")
	f.IntVar(&o.Webhooks.FirstAttemptsPerEndpoint, "webhook-first-attempts-per-endpoint", engine.DefaultFirstAttemptsPerEndpoint,
		"first attempts of one endpoint waiting for a slot or in flight; past it its deliveries go to the controller, which parks them (rule EndpointQueueFull)")
	f.IntVar(&o.Webhooks.FirstAttempts, "webhook-first-attempts", engine.DefaultFirstAttempts,
		"first attempts waiting for a slot or in flight in all; past it deliveries go to the controller (rule EngineFull), and it paces the outbox claims")
	f.DurationVar(&o.Webhooks.StopGrace, "webhook-stop-grace", engine.DefaultStopGrace,
		"on SIGTERM, how long first attempts already sent may finish, so their receivers are not sent the same event again by another replica (0: cut them short); keep it under the pod's terminationGracePeriodSeconds")
	f.IntVar(&o.Webhooks.MaxPendingDeliveries, "webhook-max-pending", 2000, "WebhookDeliveries awaiting their first attempt before the dispatcher stops taking outbox events (back-pressure)")
	f.IntVar(&o.Webhooks.MaxLiveDeliveriesPerEndpoint, "webhook-max-live-per-endpoint", engine.DefaultMaxLiveDeliveriesPerEndpoint,
		"live WebhookDeliveries of one endpoint (waiting or retrying) past which its deliveries that need one wait in PostgreSQL until room frees (-1: no bound)")
	f.DurationVar(&o.Retention.Window, "webhook-retention", retention.DefaultWindow,
		"how long outbox events and delivery history are kept (the deliveries list shows 30 days; a resend needs the event); refused if shorter than a delivery's retries")
	f.DurationVar(&o.Retention.PartitionWidth, "webhook-retention-partition", retention.DefaultPartitionWidth,
		"created_at range of one partition of the outbox and the history (testing: minutes make a soak drop partitions)")
	_ = f.MarkHidden("webhook-retention-partition")
	f.IntVar(&o.Webhooks.MaxLiveDeliveries, "webhook-max-live", engine.DefaultMaxLiveDeliveries,
		"WebhookDeliveries in etcd, retrying ones included, past which deliveries that need one wait in PostgreSQL until room frees; first attempts go on (-1: no bound)")
	f.StringVar(&linkKeyFile, "link-signing-key-file", "", "file holding the secret (at least 32 bytes) that signs recording links (default $SWITCHBOARD_LINK_SIGNING_KEY)")
	f.StringVar(&o.Recordings.Backend, "recordings-backend", recordingstore.BackendLocal, "where recordings live: local or s3")
	f.StringVar(&o.Recordings.Dir, "recordings-dir", "/var/lib/switchboard/recordings", "directory of the local recording store")
	f.StringVar(&o.Recordings.S3.Endpoint, "s3-endpoint", "", "S3-compatible endpoint host[:port]; credentials come from $SWITCHBOARD_S3_ACCESS_KEY and $SWITCHBOARD_S3_SECRET_KEY")
	f.StringVar(&o.Recordings.S3.Bucket, "s3-bucket", "", "bucket of the s3 recording store")
	f.StringVar(&o.Recordings.S3.Region, "s3-region", "", "region of the bucket")
	f.BoolVar(&o.Recordings.S3.UseSSL, "s3-use-ssl", true, "talk HTTPS to the S3 endpoint")
	f.StringVar(&o.Transcription.Speech, "speech-engine", transcription.SpeechLocal, "speech to text: local or vosk (Vosk small en-us model, no network; hack/install-vosk.sh), pocketsphinx (CMU PocketSphinx, no network; inaccurate) or openai (any OpenAI-compatible /audio/transcriptions server; key from $SWITCHBOARD_SPEECH_API_KEY)")
	f.StringVar(&o.Transcription.SpeechURL, "speech-url", "", "API root of the openai speech engine, e.g. https://api.openai.com/v1 or http://whisper:8000/v1")
	f.StringVar(&o.Transcription.SpeechModel, "speech-model", "whisper-1", "model of the openai speech engine")
	f.StringVar(&o.Transcription.Summary, "summary-engine", transcription.SummaryBuiltin, "AI summaries: builtin (word lists and phone-number parsing, no network) or openai (chat completions with a JSON schema; key from $SWITCHBOARD_SUMMARY_API_KEY)")
	f.StringVar(&o.Transcription.SummaryURL, "summary-url", "", "API root of the openai summary engine, e.g. https://api.openai.com/v1")
	f.StringVar(&o.Transcription.SummaryModel, "summary-model", "gpt-4o-mini", "model of the openai summary engine")
	addRealtimeFlags(f, &o.Realtime, &realtimeSecretFile)
	return cmd
}

// linkSigningKey reads the recording-link secret from a file or the environment, never a flag
// value (flags show up in process listings).
func linkSigningKey(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read the link signing key: %w", err)
		}
		return bytes.TrimSpace(b), nil
	}
	return []byte(os.Getenv("SWITCHBOARD_LINK_SIGNING_KEY")), nil
}
