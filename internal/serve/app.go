// Package serve runs the whole service in one process: the public and platform APIs (on every
// replica, always) and the leader-only parts (controllers, dispatcher, sweepers) in terms of
// leader election (see leaderTerms).
package serve

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
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// MaxRequeue caps how long the webhook controllers wait before looking again at a
	// delivery's retry or an endpoint's deadline (0: no cap). Only for tests that move a fake
	// Clock: the waits themselves run in real time.
	MaxRequeue time.Duration
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
	if err := resolveLeaderElection(&o); err != nil {
		return err
	}
	st, err := migrateAndOpen(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	s := &service{o: o, prepared: p, store: st}
	if err := s.newManager(); err != nil {
		return err
	}
	// Gauges read at scrape time: the outbox from PostgreSQL, webhook resources from the cache.
	defer metrics.SetGaugeSources(metrics.GaugeSources{Outbox: outboxBacklog(st),
		Webhooks: metrics.CacheWebhookResources{Reader: s.mgr.GetClient()}, Clock: o.Clock})()
	if err := s.connectKube(); err != nil {
		return err
	}
	if err := s.addProbes(); err != nil {
		return err
	}
	s.resolveLinks()
	if err := s.startTranscriptions(); err != nil {
		return err
	}
	if err := s.foldCallCounts(); err != nil {
		return err
	}
	// Webhook first attempts run on every replica; the leader's controllers share the engine.
	if s.engine, err = newDeliveryEngine(ctx, s.mgr, s.o.RestConfig, st, s.o); err != nil {
		return err
	}
	if err := s.addLeaderTerms(ctx); err != nil {
		return err
	}
	api, err := s.publicAPI()
	if err != nil {
		return err
	}
	accountPortal := s.accountPortal()
	defer accountPortal.Wait()
	if err := s.servePublic(api, accountPortal); err != nil {
		return err
	}
	if err := s.servePlatform(); err != nil {
		return err
	}
	return s.mgr.Start(ctx)
}

// service is what Run assembles, step by step: each step adds its parts to the always-on
// manager and keeps what later steps share.
type service struct {
	o        Options
	prepared *prepared
	store    *store.Store

	// mgr runs what every replica runs, always: the APIs, probes and metrics. The leader-only
	// parts run in managers of their own (leaderTerms), so losing the Lease never stops the API.
	mgr        ctrl.Manager
	mgrOptions ctrl.Options
	// kube is the API's client: uncached (no informers on every replica) and every call bounded.
	kube     client.Client
	kubePing func(context.Context) error

	base           string
	eventLinks     events.Links
	stt            transcription.SpeechToText
	summarizer     transcription.Summarizer
	transcriptions *transcription.Service
	engine         *engine.Engine
	// hooks is the one webhooks service of the API and the portal: the same rules, limits and gate.
	hooks *endpoints.Endpoints
}

// resolveLeaderElection fills in the election's settings, or warns that it is off.
func resolveLeaderElection(o *Options) error {
	if !o.LeaderElection {
		o.Log.Info("WARNING: leader election is off: run one replica only; two replicas would both run the controllers and could retry a delivery twice (--leader-elect=true)")
		return nil
	}
	var err error
	o.Election, err = o.Election.resolve()
	return err
}

// migrateAndOpen brings the schema up to date and opens the pool.
func migrateAndOpen(ctx context.Context, url string) (*store.Store, error) {
	if _, err := store.Migrate(ctx, url); err != nil {
		return nil, err
	}
	return store.Open(ctx, url)
}

// newManager creates the always-on manager.
func (s *service) newManager() error {
	s.mgrOptions = ctrl.Options{
		Scheme:  Scheme(),
		Logger:  s.o.Log,
		Metrics: metricsServerOptions(s.o),
		Cache:   controllers.CacheOptions(),
	}
	var err error
	if s.mgr, err = ctrl.NewManager(s.o.RestConfig, s.mgrOptions); err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	return nil
}

// connectKube makes the API's kube-apiserver client and the probes' ping.
func (s *service) connectKube() error {
	var err error
	if s.kube, err = kubeapi.NewClient(s.o.RestConfig, Scheme(), s.o.KubeAPITimeout); err != nil {
		return err
	}
	s.kubePing, err = kubeapi.NewPing(s.o.RestConfig, probeTimeout)
	return err
}

// addProbes serves the health probes (and pprof when asked), unless they are off.
func (s *service) addProbes() error {
	if s.o.ProbeAddr == "" || s.o.ProbeAddr == "0" {
		return nil
	}
	probes := probeHandler(s.store.Ping, s.kubePing)
	if s.o.Pprof {
		probes = withPprof(probes)
	}
	return s.mgr.Add(&httpRunnable{name: "the health probes", addr: s.o.ProbeAddr, ln: s.prepared.probes, log: s.o.Log.WithName("probes"),
		handler: probes})
}

// resolveLinks settles the addresses events and notifications point at: links.dashboard is
// the portal's call page unless another web app is configured.
func (s *service) resolveLinks() {
	s.base = s.o.PublicBaseURL
	if s.base == "" {
		s.base = "http://" + s.o.APIAddr
	}
	if s.o.DashboardURL == "" {
		s.o.DashboardURL = strings.TrimRight(s.base, "/") + strings.TrimSuffix(portal.Root, "/")
	}
	s.eventLinks = events.Links{APIBaseURL: s.base, DashboardURL: s.o.DashboardURL}
}

// startTranscriptions sets up paid transcriptions: the configured engines (for the leader's
// controller), the service, and its background job queue. The sweeper of charges whose job a
// crash left uncreated runs on the leader (addLeaderTerms).
func (s *service) startTranscriptions() error {
	var err error
	if s.stt, s.summarizer, err = transcription.NewEngines(s.o.Transcription); err != nil {
		return err
	}
	if local, ok := s.stt.(interface{ Available() bool }); ok && !local.Available() {
		s.o.Log.Info("the local speech engine is not installed: transcriptions will fail and be refunded; run hack/install-speech-tools.sh (and hack/install-vosk.sh for vosk) or configure --speech-engine=openai",
			"engine", s.o.Transcription.Speech)
	}
	s.transcriptions = &transcription.Service{Store: s.store, Kube: s.kube, Clock: s.o.Clock, Links: s.eventLinks, Log: s.o.Log.WithName("transcription")}
	// Jobs are created in the background after the charge commits (the API answers without
	// waiting on the kube-apiserver); the sweeper catches any a crash or a full queue left.
	s.transcriptions.Queue = transcription.NewJobQueue(s.transcriptions, 10000, 4)
	return s.mgr.Add(s.transcriptions.Queue)
}

// addLeaderTerms runs the leader-only parts, registered afresh on each term's manager, and
// builds the first term's manager now so a setup error stops the process at once.
func (s *service) addLeaderTerms(ctx context.Context) error {
	terms := &leaderTerms{election: s.o.LeaderElection, opts: s.o.Election, newManager: s.leaderOnly(ctx),
		base: s.mgrOptions, clock: s.o.Clock, log: s.o.Log.WithName("leader")}
	var err error
	if s.o.LeaderElection {
		if terms.lock, err = newLeaseLock(s.o.RestConfig, s.o.Election); err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
	}
	if terms.first, err = terms.newManager(terms.termOptions()); err != nil {
		return err
	}
	return s.mgr.Add(terms)
}

// leaderOnly builds one term's manager with the leader-only parts: the transcription job
// controller and sweeper, the webhook controllers, the rate-limit pruner and retention.
func (s *service) leaderOnly(ctx context.Context) func(ctrl.Options) (ctrl.Manager, error) {
	return func(mo ctrl.Options) (ctrl.Manager, error) {
		lm, err := ctrl.NewManager(s.o.RestConfig, mo)
		if err != nil {
			return nil, fmt.Errorf("create the leader-only manager: %w", err)
		}
		if err := (&controllers.TranscriptionJobReconciler{Client: lm.GetClient(), Store: s.store, Recordings: s.prepared.recordings,
			SpeechToText: s.stt, Summarizer: s.summarizer, Links: s.eventLinks, Clock: s.o.Clock,
			Recorder: lm.GetEventRecorder("switchboard-transcription")}).SetupWithManager(lm); err != nil {
			return nil, fmt.Errorf("set up the transcription job controller: %w", err)
		}
		if err := lm.Add(&transcription.JobSweeper{Service: s.transcriptions, Clock: s.o.Clock}); err != nil {
			return nil, err
		}
		if err := setupWebhooks(ctx, lm, s.store, s.o, s.engine); err != nil {
			return nil, err
		}
		if err := lm.Add(&rateLimitPruner{store: s.store, clock: s.o.Clock, log: s.o.Log.WithName("ratelimit")}); err != nil {
			return nil, err
		}
		if err := lm.Add(&retention.Maintainer{Store: s.store, Config: s.o.Retention, Clock: s.o.Clock, Log: s.o.Log.WithName("retention")}); err != nil {
			return nil, err
		}
		return lm, nil
	}
}

// publicAPI builds the v1 API with the webhooks service and the live channel.
func (s *service) publicAPI() (http.Handler, error) {
	s.hooks = &endpoints.Endpoints{Kube: s.kube, Reader: s.kube, Store: s.store, Clock: s.o.Clock,
		URLPolicy: send.URLPolicy{AllowPrivateTargets: s.o.Webhooks.AllowPrivateTargets}}
	resources := []func(*apiserver.Server) apiserver.Resource{apiserver.Webhooks(apiserver.WebhooksConfig{Service: s.hooks})}
	live, err := setupRealtime(s.mgr, s.store, s.o)
	if err != nil {
		return nil, err
	}
	resources = append(resources, live)
	return apiserver.New(apiserver.Config{
		BaseURL:           s.base,
		RequestsPerMinute: s.o.RequestsPerMinute,
		Clock:             s.o.Clock,
		Log:               s.o.Log.WithName("api"),
		Media:             apiserver.MediaConfig{SigningKey: s.o.LinkSigningKey, Recordings: s.prepared.recordings},
		Kube:              s.kube,
		TranscriptionJobs: s.transcriptions.Queue,
	}, s.store, resources...), nil
}

// accountPortal builds the account portal; its mails go out through the SMTP relay, if any.
func (s *service) accountPortal() *portal.Portal {
	var mailer send.Mailer
	if s.o.Webhooks.SMTPAddr != "" {
		mailer = send.SMTPMailer{Addr: s.o.Webhooks.SMTPAddr, From: s.o.Webhooks.MailFrom}
	}
	return portal.New(portal.Config{BaseURL: s.base, Mailer: mailer, Clock: s.o.Clock, Log: s.o.Log.WithName("portal"),
		IdleTimeout: s.o.Portal.IdleTimeout, Lifetime: s.o.Portal.Lifetime, Webhooks: s.hooks, LinkSigningKey: s.o.LinkSigningKey,
		Transcriptions: s.transcriptions, Outbox: s.o.Portal.DevOutbox, EventLinks: s.eventLinks}, s.store)
}

// servePublic serves the API and the portal on the public listener: the portal shares the
// API's origin, so its links and cookies need no second host name or certificate.
func (s *service) servePublic(api http.Handler, accountPortal *portal.Portal) error {
	public := http.NewServeMux()
	public.Handle(portal.Root, accountPortal.Handler())
	public.Handle("/", api)
	return s.mgr.Add(&httpRunnable{name: "the v1 API", addr: s.o.APIAddr, ln: s.prepared.api, handler: public, log: s.o.Log.WithName("api"), ready: s.o.Ready,
		timeouts: s.o.HTTPTimeouts})
}

// servePlatform serves the platform ingestion API when a platform token is configured.
func (s *service) servePlatform() error {
	if s.o.PlatformToken == "" {
		s.o.Log.Info("platform ingestion is off: no platform token is configured")
		return nil
	}
	if s.o.PlatformAddr == "" {
		s.o.PlatformAddr = ingest.DefaultAddr
	}
	platform := ingest.New(ingest.Config{Token: s.o.PlatformToken, LinkSigningKey: s.o.LinkSigningKey, Recordings: s.prepared.recordings,
		Links: s.eventLinks, Clock: s.o.Clock, Log: s.o.Log.WithName("ingest"), RecordedCall: s.transcriptions.RecordedCall,
		CallBatchSize: s.o.PlatformCallBatchSize, CallBatchesAtOnce: s.o.PlatformCallBatches}, s.store)
	platformTimeouts := s.o.HTTPTimeouts
	platformTimeouts.Read = s.o.PlatformReadTimeout
	if platformTimeouts.Read <= 0 {
		platformTimeouts.Read = DefaultPlatformReadTimeout
	}
	return s.mgr.Add(&httpRunnable{name: "the platform ingestion API", addr: s.o.PlatformAddr, ln: s.prepared.platform, handler: platform, log: s.o.Log.WithName("ingest"),
		timeouts: platformTimeouts})
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
		Recorder: recorder, MaxRequeue: w.MaxRequeue}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.WebhookDeliveryReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: st, Clock: o.Clock,
		Engine: eng, MaxConcurrentReconciles: w.MaxConcurrentDeliveries, MaxRequeue: w.MaxRequeue, Recorder: recorder}).SetupWithManager(ctx, mgr); err != nil {
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

// foldCallCounts folds the counts reported calls leave as deltas, on every replica (the
// database lets one fold at a time).
func (s *service) foldCallCounts() error {
	return s.mgr.Add(&ingest.CountFolder{Store: s.store, Clock: s.o.Clock, Log: s.o.Log.WithName("call-counts")})
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
