// Package apiserver is the go-restful facade that serves the public /v1 JSON API.
// Each resource lives in its own file and registers itself with AddToContainer;
// authentication, rate limiting, recovery and logging are container filters.
package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// APIRoot is the path of the v1 API.
const APIRoot = "/v1"

// Config is the facade's configuration.
type Config struct {
	// BaseURL is the public origin (scheme://host[:port]) used in links, e.g. page URLs.
	BaseURL string
	// RequestsPerMinute is the per-user limit shared by all of a user's keys (spec: 60).
	RequestsPerMinute int
	Clock             clock.PassiveClock
	Log               logr.Logger
	// Media signs recording links and holds the audio they serve (see recordings.go).
	Media MediaConfig
	// Kube reads and writes the account's custom resources (webhook endpoints, deliveries,
	// transcription jobs) in its namespace (see internal/tenancy).
	Kube client.Client
	// TranscriptionJobs, when set, creates TranscriptionJobs in the background after the
	// charge commits; unset, POST /calls/{call}/transcribe creates the job before answering.
	TranscriptionJobs *transcription.JobQueue
}

// Resource is one part of the API; it adds its web service to the container.
type Resource interface {
	AddToContainer(c *restful.Container)
}

// Store is what the API reads and writes: authentication, idempotency, each resource's
// domain, and what the transcription and webhooks services it builds need.
type Store interface {
	store.Accounts
	store.Keys
	store.Idempotency
	store.Calls
	store.Recordings
	store.Contacts
	store.Inbox
	store.Messages
	store.Billing
	store.Numbers
	store.Realtime
	store.Transcriptions
	endpoints.Store
}

// Server holds what every resource needs.
type Server struct {
	cfg   Config
	store Store
	// anonymousPrefixes are paths served without an API key (signed links carry their own proof).
	anonymousPrefixes []string
	// realtime is the live channel's configuration when it is served (realtime.go).
	realtime *RealtimeConfig
}

// allowAnonymous lets requests under prefix through without a key; the route must check
// its own proof (for example a signature in the URL).
func (s *Server) allowAnonymous(prefix string) {
	s.anonymousPrefixes = append(s.anonymousPrefixes, prefix)
}

// New builds the container with the core resources and any extra ones.
func New(cfg Config, st Store, extra ...func(*Server) Resource) *restful.Container {
	if cfg.RequestsPerMinute == 0 {
		cfg.RequestsPerMinute = 60
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	s := &Server{cfg: cfg, store: st}

	// Compact JSON: indenting every response cost about a tenth of the API's CPU on the call
	// list (go-restful's default is indented).
	restful.PrettyPrintResponses = false
	c := restful.NewContainer()
	c.Router(restful.CurlyRouter{})
	c.DoNotRecover(false)
	c.RecoverHandler(s.recoverPanic)
	c.ServiceErrorHandler(s.serviceError)
	c.Filter(s.logEachRequest)
	c.Filter(s.recordMetrics)
	c.Filter(s.authenticate)
	c.Filter(s.rateLimitHeaders)
	c.Filter(s.rateLimit)

	resources := []Resource{
		meResource{s}, balanceResource{s}, numbersResource{s}, callsResource{s}, recordingsResource{s},
		smsResource{s}, contactsResource{s}, tasksResource{s}, notificationsResource{s},
		receptionMessagesResource{s}, jobRequestsResource{s}, blockedCallersResource{s},
		analyticsResource{s}, billingResource{s}, sharedPagesResource{s},
	}
	for _, mk := range extra {
		resources = append(resources, mk(s))
	}
	for _, r := range resources {
		r.AddToContainer(c)
	}
	openAPIResource{s, c}.AddToContainer(c)
	// Paths outside every web service (go-restful's 404 comes through serviceError).
	c.ServeMux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		withRequestID(w, r)
		w.Header().Set("Content-Type", restful.MIME_JSON)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"No such path."}` + "\n"))
	})
	return c
}

func (s *Server) serviceError(se restful.ServiceError, req *restful.Request, resp *restful.Response) {
	// go-restful's own headers, such as Allow on a 405.
	for name, values := range se.Header {
		for _, v := range values {
			resp.Header().Add(name, v)
		}
	}
	switch se.Code {
	case http.StatusNotFound:
		writeError(resp, http.StatusNotFound, "No such path.")
	case http.StatusMethodNotAllowed:
		writeError(resp, http.StatusMethodNotAllowed, "This path does not support "+req.Request.Method+".")
	case http.StatusUnsupportedMediaType:
		writeError(resp, http.StatusUnsupportedMediaType, "Send the body as JSON with Content-Type: application/json.")
	case http.StatusNotAcceptable:
		writeError(resp, http.StatusNotAcceptable, "This API answers in JSON; send Accept: application/json.")
	default:
		writeError(resp, se.Code, http.StatusText(se.Code))
	}
}

func (s *Server) recoverPanic(reason any, w http.ResponseWriter) {
	s.cfg.Log.Error(fmt.Errorf("%v", reason), "panic while serving a request")
	w.Header().Set("Content-Type", restful.MIME_JSON)
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(`{"message":"Something went wrong on our side. Please try again."}` + "\n"))
}

// internalError logs err (never the request's secrets) and answers 500, or 503 when the
// database or kube-apiserver could not be reached (unavailable.go).
func (s *Server) internalError(req *restful.Request, resp *restful.Response, err error) {
	if isUnavailable(err) {
		s.serviceUnavailable(req, resp, err)
		return
	}
	s.cfg.Log.Error(err, "request failed", "method", req.Request.Method, "path", req.Request.URL.Path)
	writeError(resp, http.StatusInternalServerError, "Something went wrong on our side. Please try again.")
}

// isAnonymous reports whether path is served without a key.
func (s *Server) isAnonymous(path string) bool {
	if path == APIRoot+"/openapi.json" {
		return true
	}
	for _, p := range s.anonymousPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// authenticate resolves the bearer key to its principal. Unknown, revoked and
// left-user keys all get the same 401, so a caller learns nothing about other keys.
func (s *Server) authenticate(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	if s.isAnonymous(req.Request.URL.Path) {
		chain.ProcessFilter(req, resp)
		return
	}
	resp.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	token, ok := auth.BearerToken(req.HeaderParameter("Authorization"))
	if !ok {
		writeError(resp, http.StatusUnauthorized, "Send your API key as: Authorization: Bearer <API_KEY>.")
		return
	}
	// The request is counted against the user's per-minute limit in the same round trip;
	// the rateLimit filter decides on the count.
	now := s.cfg.Clock.Now()
	window := now.Truncate(time.Minute)
	p, hits, err := s.store.AuthenticateAndCount(req.Request.Context(), auth.Digest(token), window)
	if err == store.ErrNotFound {
		writeError(resp, http.StatusUnauthorized, "This API key is not valid: it is wrong, revoked, or its user has left the account.")
		return
	}
	if err != nil {
		// Not a refusal of the key: the key could not be checked (503 when the database is away).
		resp.Header().Del("WWW-Authenticate")
		s.internalError(req, resp, err)
		return
	}
	resp.Header().Del("WWW-Authenticate")
	req.SetAttribute(attrPrincipal, &p)
	req.SetAttribute(attrUserRequests, userRequests{window: window, now: now, count: hits})
	chain.ProcessFilter(req, resp)
}

// rateLimit applies the per-user limit in fixed one-minute windows counted in PostgreSQL,
// so every replica of the API shares one count per user. authenticate counted the request.
func (s *Server) rateLimit(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	hits, ok := req.Attribute(attrUserRequests).(userRequests)
	if !ok {
		chain.ProcessFilter(req, resp)
		return
	}
	if hits.count > s.cfg.RequestsPerMinute {
		metrics.APIRateLimited(metrics.LimitPerUser)
		tooManyRequests(resp, retryAfterSeconds(hits.now, hits.window))
		return
	}
	chain.ProcessFilter(req, resp)
}

// userRequests is the authenticated user's request count in the current window.
type userRequests struct {
	window, now time.Time
	count       int
}

const attrUserRequests = "switchboard.userRequests"

// retryAfterSeconds is the whole seconds until the window ends (at least 1).
func retryAfterSeconds(now, window time.Time) int {
	return wholeSeconds(window.Add(time.Minute).Sub(now))
}

// wholeSeconds is d rounded up to whole seconds, at least 1 (a Retry-After).
func wholeSeconds(d time.Duration) int {
	secs := int((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return secs
}

func tooManyRequests(resp *restful.Response, retryAfter int) {
	resp.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	writeError(resp, http.StatusTooManyRequests, fmt.Sprintf("Too many requests. Try again in %d seconds.", retryAfter))
}

// respond writes body, or the 404 for a record of kind what that this account does not have.
func (s *Server) respond(req *restful.Request, resp *restful.Response, what string, body any, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound(resp, what)
	case err != nil:
		s.internalError(req, resp, err)
	default:
		writeJSON(resp, http.StatusOK, body)
	}
}
