// Package app runs the whole service in one process: the public and platform APIs (on every
// replica, always) and the leader-only parts (controllers, dispatcher, sweepers) in terms of
// leader election (see leaderTerms).
package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/devoutbox"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/portal"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/retention"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/engine"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Options configure a running service.
type Options struct {
	DatabaseURL string
	// APIAddr is where the public /v1 API listens.
	APIAddr string
	// PublicBaseURL is the origin clients use to reach the API (for links); default http://APIAddr.
	PublicBaseURL string
	MetricsAddr   string
	ProbeAddr     string
	// Pprof serves Go's profiles at /debug/pprof/ on ProbeAddr (off by default).
	Pprof             bool
	LeaderElection    bool
	RequestsPerMinute int
	RestConfig        *rest.Config
	Clock             clock.WithTicker
	Log               logr.Logger
	// Recordings chooses where call audio lives (a local directory or an S3-compatible bucket).
	Recordings recordingstore.Config
	// LinkSigningKey signs recording links; every replica must share it.
	LinkSigningKey []byte
	// PlatformAddr is where the internal ingestion API listens (never the public port).
	PlatformAddr string
	// PlatformToken authenticates the telephony platform; empty switches ingestion off.
	PlatformToken string
	// DashboardURL is the web app's origin, for links in events.
	DashboardURL string
	// Transcription chooses the speech-to-text and summary engines of TranscriptionJobs.
	Transcription transcription.EngineConfig
	// Webhooks configures webhook delivery.
	Webhooks WebhookOptions
	// Realtime configures the live channel (realtime.go); off without a secret.
	Realtime RealtimeOptions
	// Retention bounds the outbox, the delivery history and the other tables that grow with
	// traffic (internal/retention); zero fields take the defaults.
	Retention retention.Config
	// Ready, when set, is called once the API is listening.
	Ready func()
	// MetricsSecure serves metrics over HTTPS to authenticated, authorized callers only (serve's
	// default); off, they are plain HTTP (make run, tests).
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for secure metrics; empty: a self-signed pair.
	MetricsCertDir string
	// HTTPTimeouts bound slow and idle clients of the public and platform listeners;
	// PlatformReadTimeout replaces Read on the platform listener (its reports carry audio).
	HTTPTimeouts        HTTPTimeouts
	PlatformReadTimeout time.Duration
	// PlatformCallBatchSize and PlatformCallBatches bound the ingestion API's group commit of
	// call reports (ingest.Config.CallBatchSize, CallBatchesAtOnce; 0: the defaults).
	PlatformCallBatchSize int
	PlatformCallBatches   int
	// Election configures the Lease when LeaderElection is on.
	Election ElectionOptions
	// Portal configures the account portal's sessions.
	Portal PortalOptions
	// KubeAPITimeout bounds every call the API makes to kube-apiserver (default
	// kubeapi.DefaultTimeout); past it the request answers 503.
	KubeAPITimeout time.Duration
}

// PortalOptions configure the account portal's sessions (zero: the portal's defaults).
type PortalOptions struct {
	// IdleTimeout ends a session unused this long; Lifetime ends any session this long after sign-in.
	IdleTimeout time.Duration
	Lifetime    time.Duration
	// DevOutbox, for `make run` only, is shown at /portal/dev/outbox (its SMTP server is
	// Webhooks.SMTPAddr). serve has no flag for it.
	DevOutbox *devoutbox.Outbox
}

// WebhookOptions configure webhook delivery.
type WebhookOptions struct {
	// SMTPAddr is the mail relay (host:port) for switch-off notices to account owners.
	SMTPAddr string
	// MailFrom is the sender of those notices.
	MailFrom string
	// AllowPrivateTargets lets endpoints be on loopback or private addresses. Off by
	// default; only for local development and tests with a receiver on this machine.
	AllowPrivateTargets bool
	// CAFile, when set, holds PEM certificates trusted for endpoints besides the system roots.
	CAFile string
	// Timeout is the answer time of an attempt (default the spec's 10 s).
	Timeout time.Duration
	// MaxConcurrentDeliveries bounds attempts in flight (default 64); PerEndpoint bounds
	// those to one endpoint (default 8).
	MaxConcurrentDeliveries int
	PerEndpoint             int
	// MaxPendingDeliveries bounds the WebhookDeliveries awaiting their first attempt (default
	// 2000): the dispatcher leaves events in the outbox meanwhile, so etcd stays small however
	// large a burst. MaxLiveDeliveries bounds all live ones, retrying ones included, and
	// MaxLiveDeliveriesPerEndpoint one endpoint's (defaults engine.DefaultMaxLiveDeliveries
	// and engine.DefaultMaxLiveDeliveriesPerEndpoint; -1: none): past either, deliveries
	// that need a resource wait in PostgreSQL until room frees.
	MaxPendingDeliveries         int
	MaxLiveDeliveries            int
	MaxLiveDeliveriesPerEndpoint int
	// FirstAttemptsPerEndpoint and FirstAttempts bound the engine's first attempts waiting
	// for a slot or in flight, of one endpoint and in all (defaults
	// engine.DefaultFirstAttemptsPerEndpoint and DefaultFirstAttempts).
	FirstAttemptsPerEndpoint, FirstAttempts int
	// StopGrace is how long first attempts already sent may finish once the process stops
	// (default engine.DefaultStopGrace; negative: none).
	StopGrace time.Duration
}

// Scheme has the built-in kinds and ours.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := switchboardv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Run migrates the database and runs the manager and the API until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if err := o.Retention.Validate(); err != nil {
		return err
	}
	p, err := prepare(&o)
	if err != nil {
		return err
	}
	defer p.closeListeners()
	if o.LeaderElection {
		var err error
		if o.Election, err = o.Election.resolve(); err != nil {
			return err
		}
	} else {
		o.Log.Info("WARNING: leader election is off: run one replica only; two replicas would both run the controllers and could retry a delivery twice (--leader-elect=true)")
	}
	if _, err := store.Migrate(ctx, o.DatabaseURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()

	// mgr runs what every replica runs, always: the APIs, probes and metrics. The leader-only
	// parts run in managers of their own (leaderTerms), so losing the Lease never stops the API.
	managerOptions := ctrl.Options{
		Scheme:  Scheme(),
		Logger:  o.Log,
		Metrics: metricsServerOptions(o),
		Cache:   controllers.CacheOptions(),
	}
	mgr, err := ctrl.NewManager(o.RestConfig, managerOptions)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	// Gauges read at scrape time: the outbox from PostgreSQL, webhook resources from the cache.
	defer metrics.SetGaugeSources(metrics.GaugeSources{Outbox: outboxBacklog(st),
		Webhooks: metrics.CacheWebhookResources{Reader: mgr.GetClient()}, Clock: o.Clock})()
	// The API's client: uncached (no informers on every replica) and every call bounded.
	kube, err := kubeapi.NewClient(o.RestConfig, Scheme(), o.KubeAPITimeout)
	if err != nil {
		return err
	}
	kubePing, err := kubeapi.NewPing(o.RestConfig, probeTimeout)
	if err != nil {
		return err
	}
	if o.ProbeAddr != "" && o.ProbeAddr != "0" {
		probes := probeHandler(st.Ping, kubePing)
		if o.Pprof {
			probes = withPprof(probes)
		}
		if err := mgr.Add(&httpRunnable{name: "the health probes", addr: o.ProbeAddr, ln: p.probes, log: o.Log.WithName("probes"),
			handler: probes}); err != nil {
			return err
		}
	}

	base := o.PublicBaseURL
	if base == "" {
		base = "http://" + o.APIAddr
	}
	recordings := p.recordings
	// Paid transcriptions: the controller with the configured engines, the sweeper of charges
	// whose job a crash left uncreated, and automatic transcription of new recorded calls.
	// links.dashboard points at the portal's call page unless another web app is configured.
	if o.DashboardURL == "" {
		o.DashboardURL = strings.TrimRight(base, "/") + strings.TrimSuffix(portal.Root, "/")
	}
	eventLinks := events.Links{APIBaseURL: base, DashboardURL: o.DashboardURL}
	stt, summarizer, err := transcription.NewEngines(o.Transcription)
	if err != nil {
		return err
	}
	if local, ok := stt.(interface{ Available() bool }); ok && !local.Available() {
		o.Log.Info("the local speech engine is not installed: transcriptions will fail and be refunded; run hack/install-speech-tools.sh (and hack/install-vosk.sh for vosk) or configure --speech-engine=openai",
			"engine", o.Transcription.Speech)
	}
	transcriptions := &transcription.Service{Store: st, Kube: kube, Clock: o.Clock, Links: eventLinks, Log: o.Log.WithName("transcription")}
	// Jobs are created in the background after the charge commits (the API answers without
	// waiting on the kube-apiserver); the sweeper catches any a crash or a full queue left.
	transcriptions.Queue = transcription.NewJobQueue(transcriptions, 10000, 4)
	if err := mgr.Add(transcriptions.Queue); err != nil {
		return err
	}
	// Webhook first attempts run on every replica; the leader's controllers share the engine.
	eng, err := newDeliveryEngine(ctx, mgr, o.RestConfig, st, o)
	if err != nil {
		return err
	}
	// The leader-only parts, registered afresh on each term's manager.
	leaderOnly := func(mo ctrl.Options) (ctrl.Manager, error) {
		lm, err := ctrl.NewManager(o.RestConfig, mo)
		if err != nil {
			return nil, fmt.Errorf("create the leader-only manager: %w", err)
		}
		if err := (&controllers.TranscriptionJobReconciler{Client: lm.GetClient(), Store: st, Recordings: recordings,
			SpeechToText: stt, Summarizer: summarizer, Links: eventLinks, Clock: o.Clock,
			Recorder: lm.GetEventRecorder("switchboard-transcription")}).SetupWithManager(lm); err != nil {
			return nil, fmt.Errorf("set up the transcription job controller: %w", err)
		}
		if err := lm.Add(&transcription.JobSweeper{Service: transcriptions, Clock: o.Clock}); err != nil {
			return nil, err
		}
		if err := setupWebhooks(ctx, lm, st, o, eng); err != nil {
			return nil, err
		}
		if err := lm.Add(&rateLimitPruner{store: st, clock: o.Clock, log: o.Log.WithName("ratelimit")}); err != nil {
			return nil, err
		}
		if err := lm.Add(&retention.Maintainer{Store: st, Config: o.Retention, Clock: o.Clock, Log: o.Log.WithName("retention")}); err != nil {
			return nil, err
		}
		return lm, nil
	}
	terms := &leaderTerms{election: o.LeaderElection, opts: o.Election, newManager: leaderOnly,
		base: managerOptions, clock: o.Clock, log: o.Log.WithName("leader")}
	if o.LeaderElection {
		if terms.lock, err = newLeaseLock(o.RestConfig, o.Election); err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
	}
	if terms.first, err = leaderOnly(terms.termOptions()); err != nil {
		return err
	}
	if err := mgr.Add(terms); err != nil {
		return err
	}
	// One webhooks service for the API and the portal: the same rules, limits and gate.
	hooks := &endpoints.Endpoints{Kube: kube, Reader: kube, Store: st, Clock: o.Clock,
		URLPolicy: send.URLPolicy{AllowPrivateTargets: o.Webhooks.AllowPrivateTargets}}
	resources := []func(*apiserver.Server) apiserver.Resource{apiserver.Webhooks(apiserver.WebhooksConfig{Service: hooks})}
	live, err := setupRealtime(mgr, st, o)
	if err != nil {
		return err
	}
	resources = append(resources, live)
	container := apiserver.New(apiserver.Config{
		BaseURL:           base,
		RequestsPerMinute: o.RequestsPerMinute,
		Clock:             o.Clock,
		Log:               o.Log.WithName("api"),
		Media:             apiserver.MediaConfig{SigningKey: o.LinkSigningKey, Recordings: recordings},
		Kube:              kube,
		TranscriptionJobs: transcriptions.Queue,
	}, st, resources...)
	// The account portal shares the public listener: same origin as the API, so its links and
	// cookies need no second host name or certificate.
	var mailer send.Mailer
	if o.Webhooks.SMTPAddr != "" {
		mailer = send.SMTPMailer{Addr: o.Webhooks.SMTPAddr, From: o.Webhooks.MailFrom}
	}
	accountPortal := portal.New(portal.Config{BaseURL: base, Mailer: mailer, Clock: o.Clock, Log: o.Log.WithName("portal"),
		IdleTimeout: o.Portal.IdleTimeout, Lifetime: o.Portal.Lifetime, Webhooks: hooks, LinkSigningKey: o.LinkSigningKey,
		Transcriptions: transcriptions, Outbox: o.Portal.DevOutbox, EventLinks: eventLinks}, st)
	defer accountPortal.Wait()
	public := http.NewServeMux()
	public.Handle(portal.Root, accountPortal.Handler())
	public.Handle("/", container)
	if err := mgr.Add(&httpRunnable{name: "the v1 API", addr: o.APIAddr, ln: p.api, handler: public, log: o.Log.WithName("api"), ready: o.Ready,
		timeouts: o.HTTPTimeouts}); err != nil {
		return err
	}
	if o.PlatformToken != "" {
		if o.PlatformAddr == "" {
			o.PlatformAddr = ingest.DefaultAddr
		}
		platform := ingest.New(ingest.Config{Token: o.PlatformToken, LinkSigningKey: o.LinkSigningKey, Recordings: recordings,
			Links: eventLinks, Clock: o.Clock, Log: o.Log.WithName("ingest"), RecordedCall: transcriptions.RecordedCall,
			CallBatchSize: o.PlatformCallBatchSize, CallBatchesAtOnce: o.PlatformCallBatches}, st)
		platformTimeouts := o.HTTPTimeouts
		platformTimeouts.Read = o.PlatformReadTimeout
		if platformTimeouts.Read <= 0 {
			platformTimeouts.Read = DefaultPlatformReadTimeout
		}
		if err := mgr.Add(&httpRunnable{name: "the platform ingestion API", addr: o.PlatformAddr, ln: p.platform, handler: platform, log: o.Log.WithName("ingest"),
			timeouts: platformTimeouts}); err != nil {
			return err
		}
	} else {
		o.Log.Info("platform ingestion is off: no platform token is configured")
	}
	return mgr.Start(ctx)
}

// setupWebhooks registers the webhook controllers (leader only) on a term's manager, with
// the delivery engine made once for the process (newDeliveryEngine).
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, st *store.Store, o Options, eng *engine.Engine) error {
	w := o.Webhooks
	var mailer send.Mailer
	if w.SMTPAddr != "" {
		mailer = send.SMTPMailer{Addr: w.SMTPAddr, From: w.MailFrom}
	} else {
		o.Log.Info("no SMTP relay configured (--smtp-addr): owners are not emailed when an endpoint is switched off")
	}
	recorder := mgr.GetEventRecorder("switchboard-webhooks")
	if err := (&controllers.WebhookEndpointReconciler{Client: mgr.GetClient(), Store: st, Clock: o.Clock, Mailer: mailer,
		Recorder: recorder}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.WebhookDeliveryReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: st, Clock: o.Clock,
		Engine: eng, MaxConcurrentReconciles: w.MaxConcurrentDeliveries, Recorder: recorder}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return mgr.Add(&engine.OrphanEndpoints{Reader: mgr.GetAPIReader(), Store: st})
}

// httpRunnable serves an HTTP API on every replica (not only the leader).
type httpRunnable struct {
	name    string
	addr    string
	ln      net.Listener // opened by prepare; nil: listen on addr at start
	handler http.Handler
	log     logr.Logger
	ready   func()
	// timeouts bound slow and idle clients (httptimeouts.go).
	timeouts HTTPTimeouts
}

func (a *httpRunnable) NeedLeaderElection() bool { return false }

func (a *httpRunnable) Start(ctx context.Context) error {
	ln := a.ln
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.addr); err != nil {
			return fmt.Errorf("listen for %s on %s: %w", a.name, a.addr, err)
		}
	}
	srv := a.timeouts.server(a.handler)
	a.log.Info("serving "+a.name, "address", ln.Addr().String())
	if a.ready != nil {
		a.ready()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	case err := <-errc:
		return err
	}
}

// rateLimitPruner deletes finished rate-limit windows and expired portal sessions (leader only: one deleter is enough).
type rateLimitPruner struct {
	store *store.Store
	clock clock.WithTicker
	log   logr.Logger
}

func (p *rateLimitPruner) NeedLeaderElection() bool { return true }

func (p *rateLimitPruner) Start(ctx context.Context) error {
	ticker := p.clock.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if _, err := p.store.PruneRateLimits(ctx, p.clock.Now().Add(-2*time.Minute)); err != nil && ctx.Err() == nil {
				p.log.Error(err, "prune rate-limit windows")
			}
			// Expired portal sessions, and sign-in links a day past expiry (kept that long so a
			// late click is told "expired", not "unknown").
			if err := p.store.PrunePortal(ctx, p.clock.Now(), p.clock.Now().Add(-24*time.Hour)); err != nil && ctx.Err() == nil {
				p.log.Error(err, "prune portal sessions and sign-in links")
			}
		}
	}
}
