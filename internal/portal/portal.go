// Package portal is the account portal: server-rendered pages under /portal/ on the public
// listener where the people of an account sign in with an emailed one-time link and manage
// their API keys and team. Sessions live in PostgreSQL (scs), so every replica serves every
// session; forms are protected against cross-site requests by net/http.CrossOriginProtection.
package portal

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Root is the path under which the portal is served.
const Root = "/portal/"

// Defaults of Config.
const (
	DefaultLinkTTL     = 15 * time.Minute
	DefaultIdleTimeout = time.Hour
	DefaultLifetime    = 12 * time.Hour
	// Sign-in requests allowed per minute for one email and for one client address.
	DefaultSignInsPerEmail   = 5
	DefaultSignInsPerAddress = 20
)

// mailsInFlight bounds the sign-in emails being sent at once; past it a request is dropped
// (and logged) rather than queued without bound.
const mailsInFlight = 16

// Config configures the portal.
type Config struct {
	// BaseURL is the public origin (scheme://host[:port]); links in emails start with it, and
	// the session cookie is Secure when it is https.
	BaseURL string
	// Mailer sends sign-in links; nil: links are only minted by the operator (admin portal-link).
	Mailer send.Mailer
	Clock  clock.PassiveClock
	Log    logr.Logger
	// LinkTTL is how long a sign-in link works (default 15 minutes).
	LinkTTL time.Duration
	// IdleTimeout ends a session unused this long; Lifetime ends any session this long after sign-in.
	IdleTimeout time.Duration
	Lifetime    time.Duration
	// SignInsPerEmail and SignInsPerAddress bound sign-in requests per minute.
	SignInsPerEmail   int
	SignInsPerAddress int
	// LinkSigningKey signs the audio player's recording links (the API's key); empty: no player.
	LinkSigningKey []byte
	// Transcriptions starts and prices transcriptions, as for the API; nil: no transcribe button.
	Transcriptions *transcription.Service
	// Webhooks is the webhooks service the API uses; nil: the webhooks page says it is not available.
	Webhooks *endpoints.Endpoints
	// Outbox, for local development only, is shown at /portal/dev/outbox and linked from every
	// page; nil (always in production): that page does not exist.
	Outbox *devoutbox.Outbox
	// EventLinks are the addresses events point at, for the event catalogue's examples.
	EventLinks events.Links
}

// Portal serves the pages.
type Portal struct {
	cfg      Config
	store    *store.Store
	sessions *scs.SessionManager
	pages    map[string]*template.Template
	mails    chan struct{}
	mailWG   sync.WaitGroup
}

//go:embed templates/*.html templates/*.tmpl
var templateFiles embed.FS

// staticFiles holds the stylesheet, served under /portal/static/ to signed-in and signed-out pages alike.
//
//go:embed static
var staticFiles embed.FS

// sessionUserKey holds the signed-in user's internal id in the session.
const sessionUserKey = "user_id"

// New builds the portal on st.
func New(cfg Config, st *store.Store) *Portal {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = DefaultLifetime
	}
	if cfg.SignInsPerEmail <= 0 {
		cfg.SignInsPerEmail = DefaultSignInsPerEmail
	}
	if cfg.SignInsPerAddress <= 0 {
		cfg.SignInsPerAddress = DefaultSignInsPerAddress
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	sm := scs.New()
	sm.Store = st.PortalSessions()
	sm.IdleTimeout = cfg.IdleTimeout
	sm.Lifetime = cfg.Lifetime
	sm.Cookie.Name = "switchboard_portal"
	sm.Cookie.Path = "/portal"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = strings.HasPrefix(cfg.BaseURL, "https://")
	sm.ErrorFunc = func(w http.ResponseWriter, _ *http.Request, err error) {
		cfg.Log.Error(err, "portal session")
		unavailable(w)
	}
	return &Portal{cfg: cfg, store: st, sessions: sm, pages: parsePages(), mails: make(chan struct{}, mailsInFlight)}
}

// Wait waits for sign-in emails still being sent.
func (p *Portal) Wait() { p.mailWG.Wait() }

// Handler is the portal's HTTP handler, for paths under Root.
func (p *Portal) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /portal/{$}", p.signedIn(p.home))
	mux.Handle("GET /portal/static/", http.StripPrefix("/portal/", http.FileServerFS(staticFiles)))
	mux.HandleFunc("GET /portal/sign-in", p.signInForm)
	mux.HandleFunc("POST /portal/sign-in", p.requestLink)
	mux.HandleFunc("GET /portal/sign-in/link", p.confirmLink)
	mux.HandleFunc("POST /portal/sign-in/link", p.useLink)
	mux.HandleFunc("POST /portal/sign-out", p.signOut)
	mux.HandleFunc("GET /portal/keys", p.signedIn(p.keys))
	mux.HandleFunc("POST /portal/keys", p.signedIn(p.createKey))
	mux.HandleFunc("POST /portal/keys/{key}/revoke", p.signedIn(p.revokeKey))
	mux.HandleFunc("GET /portal/calls", p.signedIn(p.calls))
	mux.HandleFunc("GET /portal/balance", p.signedIn(p.balance))
	mux.HandleFunc("GET /portal/calls/{call}", p.signedIn(p.call))
	mux.HandleFunc("GET /portal/calls/{call}/transcribe", p.signedIn(p.transcribeQuote))
	mux.HandleFunc("POST /portal/calls/{call}/transcribe", p.signedIn(p.transcribe))
	mux.HandleFunc("GET /portal/todos", p.signedIn(p.todos))
	mux.HandleFunc("POST /portal/todos/{task}/status", p.signedIn(p.setTodoStatus))
	mux.HandleFunc("GET /portal/notifications", p.signedIn(p.notifications))
	mux.HandleFunc("POST /portal/notifications/read-all", p.signedIn(p.readAllNotifications))
	mux.HandleFunc("POST /portal/notifications/{notification}/read", p.signedIn(p.readNotification))
	mux.HandleFunc("GET /portal/voicemails", p.signedIn(p.voicemails))
	mux.HandleFunc("GET /portal/jobs", p.signedIn(p.jobs))
	mux.HandleFunc("GET /portal/messages", p.signedIn(p.messages))
	mux.HandleFunc("GET /portal/blocked", p.signedIn(p.blocked))
	mux.HandleFunc("GET /portal/texts", p.signedIn(p.texts))
	mux.HandleFunc("GET /portal/contacts", p.signedIn(p.contacts))
	mux.HandleFunc("GET /portal/texts/{conversation}", p.signedIn(p.textThread))
	mux.HandleFunc("GET /portal/team", p.signedIn(p.team))
	mux.HandleFunc("POST /portal/team/invite", p.signedIn(p.invite))
	mux.HandleFunc("POST /portal/team/{user}/allowances", p.signedIn(p.setAllowances))
	mux.HandleFunc("POST /portal/team/{user}/remove", p.signedIn(p.removeUser))
	mux.HandleFunc("GET /portal/webhooks", p.signedIn(p.owner(p.webhooks)))
	mux.HandleFunc("POST /portal/webhooks", p.signedIn(p.owner(p.createWebhook)))
	mux.HandleFunc("GET /portal/webhooks/events", p.signedIn(p.owner(p.eventCatalogue)))
	mux.HandleFunc("GET /portal/webhooks/{endpoint}", p.signedIn(p.owner(p.webhook)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}", p.signedIn(p.owner(p.updateWebhook)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/status", p.signedIn(p.owner(p.setWebhookStatus)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/rotate", p.signedIn(p.owner(p.rotateWebhook)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/recover", p.signedIn(p.owner(p.recoverWebhook)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/rate-limit", p.signedIn(p.owner(p.setWebhookRateLimit)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/test", p.signedIn(p.owner(p.testWebhook)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/delete", p.signedIn(p.owner(p.deleteWebhook)))
	mux.HandleFunc("GET /portal/webhooks/{endpoint}/deliveries/{event}", p.signedIn(p.owner(p.delivery)))
	mux.HandleFunc("POST /portal/webhooks/{endpoint}/deliveries/{event}/resend", p.signedIn(p.owner(p.resendDelivery)))
	if p.cfg.Outbox != nil {
		mux.HandleFunc("GET /portal/dev/outbox", p.outbox)
	}
	mux.HandleFunc("/portal/", func(w http.ResponseWriter, r *http.Request) {
		p.render(w, r, http.StatusNotFound, "message.html", page{Title: "Not found", Message: "There is nothing at this address."})
	})
	// Every unsafe request from another origin is refused (Sec-Fetch-Site, then Origin against Host).
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Request refused",
			Message: "This form was sent from another site, so it was refused. Open the portal and try again."})
	}))
	return csrf.Handler(p.sessions.LoadAndSave(securityHeaders(mux)))
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// viewer is the signed-in user and their account.
type viewer struct {
	User    store.User
	Account store.Account
}

// signedIn runs h for a signed-in user still on their account; otherwise it ends the session
// and sends the browser to sign in, coming back here after.
func (p *Portal) signedIn(h func(http.ResponseWriter, *http.Request, viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := p.sessions.GetInt64(r.Context(), sessionUserKey)
		if id != 0 {
			u, err := p.store.GetUser(r.Context(), id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				p.fail(w, r, err)
				return
			}
			if err == nil && u.LeftAt == nil {
				acct, err := p.store.GetAccount(r.Context(), u.AccountID)
				if err != nil {
					p.fail(w, r, err)
					return
				}
				h(w, r, viewer{User: u, Account: acct})
				return
			}
			// The user left the account: every session of theirs ends on its next request.
			if err := p.sessions.Destroy(r.Context()); err != nil {
				p.fail(w, r, err)
				return
			}
		}
		next := r.URL.Path
		if r.Method != http.MethodGet {
			next = Root
		} else if r.URL.RawQuery != "" {
			next += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, "/portal/sign-in?next="+url.QueryEscape(next), http.StatusSeeOther)
	}
}

// safeNext keeps a return address only when it is a path of the portal.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Root) || strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "//") {
		return Root
	}
	return next
}

// SignInLink mints a one-time sign-in link for userID valid for ttl, returning to next.
// The operator's `admin portal-link` and the emailed links are made by this one function.
func SignInLink(ctx context.Context, st *store.Store, now time.Time, ttl time.Duration, baseURL string, userID int64, next string) (string, error) {
	secret, err := st.NewSignInLink(ctx, userID, now, now.Add(ttl))
	if err != nil {
		return "", err
	}
	q := url.Values{"token": {secret}}
	if next = safeNext(next); next != Root {
		q.Set("next", next)
	}
	return strings.TrimRight(baseURL, "/") + "/portal/sign-in/link?" + q.Encode(), nil
}

func (p *Portal) signInForm(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, "sign-in.html", page{Title: "Sign in", Next: safeNext(r.URL.Query().Get("next"))})
}

// requestLink emails a sign-in link to each account's user with this email. The answer is
// the same whether or not the email has an account, and the email goes out in the background
// so the answer's timing does not tell either.
func (p *Portal) requestLink(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	next := safeNext(r.PostFormValue("next"))
	if email == "" || !strings.Contains(email, "@") || len(email) > 320 {
		p.render(w, r, http.StatusUnprocessableEntity, "sign-in.html", page{Title: "Sign in", Next: next, Error: "Enter your email address."})
		return
	}
	now := p.cfg.Clock.Now()
	window := now.Truncate(time.Minute)
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	for _, limit := range []struct {
		subject string
		max     int
	}{{"portal-sign-in:email:" + hex.EncodeToString(sum[:16]), p.cfg.SignInsPerEmail}, {"portal-sign-in:addr:" + clientAddress(r), p.cfg.SignInsPerAddress}} {
		n, err := p.store.HitRateLimit(r.Context(), limit.subject, window)
		if err != nil {
			p.fail(w, r, err)
			return
		}
		if n > limit.max {
			w.Header().Set("Retry-After", fmt.Sprint(int(window.Add(time.Minute).Sub(now).Seconds())+1))
			p.render(w, r, http.StatusTooManyRequests, "message.html", page{Title: "Too many sign-in requests",
				Message: "Too many sign-in links were asked for just now. Wait a minute and try again."})
			return
		}
	}
	users, err := p.store.UsersByEmail(r.Context(), email)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if len(users) > 0 {
		p.emailLinks(email, users, next)
	}
	p.render(w, r, http.StatusOK, "message.html", page{Title: "Check your email",
		Message: "If " + email + " belongs to a user of an account, a sign-in link is on its way. It works once, for " +
			fmt.Sprint(int(p.cfg.LinkTTL.Minutes())) + " minutes."})
}

func (p *Portal) emailLinks(email string, users []store.User, next string) {
	if p.cfg.Mailer == nil {
		p.cfg.Log.Info("a sign-in link was asked for, but no SMTP relay is configured (--smtp-addr); the operator can mint one with admin portal-link")
		return
	}
	select {
	case p.mails <- struct{}{}:
	default:
		p.cfg.Log.Info("too many sign-in emails in flight; this request was dropped")
		return
	}
	p.mailWG.Add(1)
	go func() {
		defer p.mailWG.Done()
		defer func() { <-p.mails }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var b strings.Builder
		b.WriteString("Hello,\n\nUse this link to sign in to the Switchboard portal. It works once, for ")
		fmt.Fprintf(&b, "%d minutes.\n\n", int(p.cfg.LinkTTL.Minutes()))
		for _, u := range users {
			acct, err := p.store.GetAccount(ctx, u.AccountID)
			if err != nil {
				p.cfg.Log.Error(err, "sign-in email: read the account")
				return
			}
			link, err := SignInLink(ctx, p.store, p.cfg.Clock.Now(), p.cfg.LinkTTL, p.cfg.BaseURL, u.ID, next)
			if err != nil {
				p.cfg.Log.Error(err, "sign-in email: mint the link")
				return
			}
			fmt.Fprintf(&b, "%s:\n%s\n\n", acct.Name, link)
		}
		b.WriteString("If you did not ask to sign in, ignore this email.\n\nSwitchboard\n")
		if err := p.cfg.Mailer.Send(ctx, []string{email}, "Your Switchboard sign-in link", b.String()); err != nil {
			p.cfg.Log.Error(err, "send a sign-in email")
		}
	}()
}

// clientAddress is the connection's IP address (the portal does not trust forwarding headers).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

var linkRefusals = map[store.SignInLinkState]string{
	store.SignInLinkUsed:    "This sign-in link has already been used. Each link works once: ask for a new one.",
	store.SignInLinkExpired: "This sign-in link has expired. Links work for a short time only: ask for a new one.",
	store.SignInLinkUnknown: "This sign-in link is not valid. Ask for a new one.",
}

// confirmLink shows a button that uses the link: opening it (as mail scanners do) does not.
func (p *Portal) confirmLink(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	state, err := p.store.CheckSignInLink(r.Context(), token, p.cfg.Clock.Now())
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if state != store.SignInLinkValid {
		p.render(w, r, http.StatusGone, "link-refused.html", page{Title: "Sign-in link refused", Message: linkRefusals[state]})
		return
	}
	p.render(w, r, http.StatusOK, "confirm.html", page{Title: "Sign in", Token: token, Next: safeNext(r.URL.Query().Get("next"))})
}

func (p *Portal) useLink(w http.ResponseWriter, r *http.Request) {
	u, state, err := p.store.UseSignInLink(r.Context(), r.PostFormValue("token"), p.cfg.Clock.Now())
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if state != store.SignInLinkValid {
		p.render(w, r, http.StatusGone, "link-refused.html", page{Title: "Sign-in link refused", Message: linkRefusals[state]})
		return
	}
	// A new session token on sign-in, so a token planted before it is worth nothing.
	if err := p.sessions.RenewToken(r.Context()); err != nil {
		p.fail(w, r, err)
		return
	}
	p.sessions.Put(r.Context(), sessionUserKey, u.ID)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (p *Portal) signOut(w http.ResponseWriter, r *http.Request) {
	if err := p.sessions.Destroy(r.Context()); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/sign-in", http.StatusSeeOther)
}

// fail answers an error from the store: a missing or foreign id is 404, a refused action 403,
// a lost database 503 with Retry-After, anything else a logged 500.
func (p *Portal) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		p.render(w, r, http.StatusNotFound, "message.html", page{Title: "Not found", Message: "There is nothing at this address."})
	case errors.Is(err, store.ErrNotAllowed):
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Message: refusal(err)})
	case store.IsUnavailable(err):
		unavailable(w)
	default:
		p.cfg.Log.Error(err, "portal request", "path", r.URL.Path)
		p.render(w, r, http.StatusInternalServerError, "message.html", page{Title: "Something went wrong", Message: "Something went wrong on our side. Try again."})
	}
}

// refusal is the reason of an ErrNotAllowed, capitalised for a page.
func refusal(err error) string {
	msg := strings.TrimPrefix(err.Error(), store.ErrNotAllowed.Error()+": ")
	if msg == "" {
		return "You may not do this."
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, "The service is briefly unavailable. Try again in a few seconds.", http.StatusServiceUnavailable)
}
