package portal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	smtpserver "github.com/emersion/go-smtp"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/testenv"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// mailbox is a real SMTP server (go-smtp) that keeps what it receives.
type mailbox struct {
	addr string
	mu   sync.Mutex
	msgs []mail
}

type mail struct {
	to   []string
	body string
}

type smtpSession struct {
	box *mailbox
	to  []string
}

func (s *smtpSession) Reset()                                     { s.to = nil }
func (s *smtpSession) Logout() error                              { return nil }
func (s *smtpSession) Mail(string, *smtpserver.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, _ *smtpserver.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.box.mu.Lock()
	defer s.box.mu.Unlock()
	s.box.msgs = append(s.box.msgs, mail{to: s.to, body: string(b)})
	return nil
}

func startMailbox(t *testing.T) *mailbox {
	box := &mailbox{}
	srv := smtpserver.NewServer(smtpserver.BackendFunc(func(*smtpserver.Conn) (smtpserver.Session, error) {
		return &smtpSession{box: box}, nil
	}))
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	box.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return box
}

var linkPattern = regexp.MustCompile(`http://\S+/portal/sign-in/link\?\S+`)

// linkFor waits for the newest email to `to` after the first `after` messages and returns its sign-in link.
func (b *mailbox) linkFor(t *testing.T, to string, after int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		msgs := b.msgs[min(after, len(b.msgs)):]
		b.mu.Unlock()
		for i := len(msgs) - 1; i >= 0; i-- {
			if len(msgs[i].to) == 1 && msgs[i].to[0] == to {
				// Quoted-printable is not used (plain text), but lines end in CRLF.
				if m := linkPattern.FindString(strings.ReplaceAll(msgs[i].body, "\r", "")); m != "" {
					return m
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no sign-in email to %s within 30 s", to)
	return ""
}

func (b *mailbox) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

// browser is headless Chromium (Debian's chromium, installed by hack/ensure-tools.sh).
type browser struct {
	t   *testing.T
	ctx context.Context
}

func startBrowser(t *testing.T) *browser {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run hack/ensure-tools.sh (as root it installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("headless", true), chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// run runs actions with a deadline; on failure it saves a screenshot of the page under the
// test's artifact directory and fails the test.
func (b *browser) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(step, err)
	}
}

// value runs one action that returns a value, with the same deadline and screenshot.
func value[T any](b *browser, step string, action chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		b.fail(step, err)
	}
	return v
}

func (b *browser) fail(step string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	shot, _ := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	file := filepath.Join(b.t.ArtifactDir(), strings.ReplaceAll(step, " ", "-")+".png")
	if len(shot) > 0 {
		_ = os.WriteFile(file, shot, 0o644)
	}
	b.t.Fatalf("%s (at %s): %v; screenshot %s", step, loc, err, file)
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return value(b, "read "+sel, chromedp.Text(sel))
}

// receiver is a real HTTPS webhook receiver that verifies each delivery's signature with the
// secret the portal showed (api/webhookverify) and keeps what arrived.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []delivered
}

// delivered is one delivery that arrived, and whether its signature verified.
type delivered struct {
	Event, ID string
	Body      []byte
	Verified  error
}

func startReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var payload struct{ Event, ID string }
		_ = json.Unmarshal(body, &payload)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.got = append(rc.got, delivered{Event: payload.Event, ID: payload.ID, Body: body, Verified: webhookverify.Verify(rc.secret, r.Header, body)})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

// await waits for a delivery that match accepts and returns it.
func (rc *receiver) await(t *testing.T, what string, match func(delivered) bool) delivered {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		for _, d := range rc.got {
			if match(d) {
				rc.mu.Unlock()
				return d
			}
		}
		rc.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not arrive at the receiver within 60 s", what)
	return delivered{}
}

func (rc *receiver) count(match func(delivered) bool) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, d := range rc.got {
		if match(d) {
			n++
		}
	}
	return n
}

// portalTest is the whole service (serve.Run) with a real SMTP sink, a real HTTPS webhook
// receiver and a browser.
type portalTest struct {
	t        *testing.T
	base     string
	platform string
	st       *store.Store
	box      *mailbox
	hooks    *receiver
	b        *browser
	demo     seed.DemoAccount
	// audio is where the service reads recordings from.
	audio recordingstore.Store
}

// platformToken authenticates the test's reports to the platform ingestion API.
const platformToken = "portal-test-platform"

func startPortal(t *testing.T) *portalTest { return startPortalWith(t, 5) }

// startPortalWith starts the service on a demo account with calls calls of history; configure,
// when given, changes the service's options before it starts.
func startPortalWith(t *testing.T, calls int, configure ...func(*serve.Options)) *portalTest {
	ctx, cancel := context.WithCancel(context.Background())
	env := testenv.Start(t)
	box := startMailbox(t)
	hooks := startReceiver(t)
	// The service trusts the receiver's certificate, and may send to loopback (off by default).
	caFile := filepath.Join(t.TempDir(), "receiver-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hooks.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// The demo's audio goes where the service reads recordings from.
	recordings := t.TempDir()
	audio, err := recordingstore.NewLocal(recordings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = audio.Close() })
	demo, err := seed.Demo(ctx, env.Store, seed.DemoOptions{Calls: calls, Recordings: audio})
	if err != nil {
		t.Fatal(err)
	}
	apiAddr, platformAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	ready := make(chan struct{})
	done := make(chan error, 1)
	opts := serve.Options{DatabaseURL: env.DatabaseURL, APIAddr: apiAddr, MetricsAddr: "0", ProbeAddr: "0",
		PublicBaseURL: "http://" + apiAddr, RequestsPerMinute: 600, RestConfig: env.ControlPlane.Config, Clock: clock.RealClock{},
		Log: logr.Discard(), Recordings: recordingstore.Config{Dir: recordings}, LinkSigningKey: []byte(strings.Repeat("k", 32)),
		PlatformAddr: platformAddr, PlatformToken: platformToken,
		Webhooks: serve.WebhookOptions{SMTPAddr: box.addr, MailFrom: "portal@switchboard.test", AllowPrivateTargets: true, CAFile: caFile},
		Ready:    func() { close(ready) }}
	for _, c := range configure {
		c(&opts)
	}
	go func() { done <- serve.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the service returned %v on shutdown", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the service did not stop within 30 s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the service ended before serving: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("the service did not start within 90 s")
	}
	return &portalTest{t: t, base: "http://" + apiAddr, platform: "http://" + platformAddr, st: env.Store, box: box, hooks: hooks,
		b: startBrowser(t), demo: demo, audio: audio}
}

// signIn asks for a link by email as a person would, opens it from the mailbox and continues.
func (p *portalTest) signIn(email string) {
	p.t.Helper()
	before := p.box.count()
	p.b.run("ask for a sign-in link for "+email,
		chromedp.Navigate(p.base+"/portal/sign-in"),
		chromedp.SendKeys("#email", email),
		chromedp.Click("#send-link"),
		chromedp.WaitVisible("#message"))
	if got := p.b.text("#title"); got != "Check your email" {
		p.b.fail("sign-in request answered", fmt.Errorf("heading %q", got))
	}
	p.openLink(p.box.linkFor(p.t, email, before))
}

func (p *portalTest) openLink(link string) {
	p.t.Helper()
	p.b.run("open the sign-in link", chromedp.Navigate(link), chromedp.WaitVisible("#continue"),
		chromedp.Click("#continue"), chromedp.WaitVisible("#sign-out"))
}

func (p *portalTest) signOut() {
	p.t.Helper()
	p.b.run("open the portal", chromedp.Navigate(p.base+"/portal/keys"))
	// Signed in, the page has the sign-out button; signed out, it is already the sign-in page.
	value(p.b, "sign out", chromedp.Evaluate[bool](`(b => b ? (b.click(), true) : false)(document.getElementById("sign-out"))`))
	p.b.run("signed out", chromedp.WaitVisible("#send-link"))
}

// me calls GET /v1/me with key and returns the status.
func (p *portalTest) me(key string) int {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// createKey creates a key on the keys page and returns the value shown once.
func (p *portalTest) createKey(name string, permissions ...string) string {
	p.t.Helper()
	actions := []chromedp.Action[chromedp.Void]{chromedp.Navigate(p.base + "/portal/keys"), chromedp.SendKeys("#key-name", name)}
	for _, perm := range permissions {
		actions = append(actions, chromedp.Click(fmt.Sprintf(`input[name=permission][value=%q]`, perm)))
	}
	actions = append(actions, chromedp.Click("#create-key"), chromedp.WaitVisible("#key-value"))
	p.b.run("create key "+name, actions...)
	return strings.TrimSpace(p.b.text("#key-value"))
}

func (p *portalTest) revokeKeyNamed(name string) {
	p.t.Helper()
	p.b.run("revoke key "+name, chromedp.Navigate(p.base+"/portal/keys"),
		chromedp.Click(fmt.Sprintf(`//tr[td[1][normalize-space()=%q]]//button[contains(@class,"revoke")]`, name)),
		chromedp.WaitVisible("#notice"))
	prefix := p.b.text("#keys")
	if strings.Contains(prefix, name) {
		p.b.fail("revoked key still listed", fmt.Errorf("%q", prefix))
	}
}

func TestPortalInBrowser(t *testing.T) {
	p := startPortal(t)
	ctx := context.Background()

	t.Run("sign in by email, create a key, use it, revoke it", func(t *testing.T) {
		p.t = t
		p.b.t = t
		p.signIn(p.demo.OwnerEmail)
		key := p.createKey("portal test key", "contacts:write")
		if !strings.HasPrefix(key, "sbk_") {
			t.Fatalf("the key shown is %q", key)
		}
		if got := p.b.text("#created-permissions"); !strings.Contains(got, "contacts:read") {
			t.Errorf("the new key's permissions do not show the implied contacts:read: %q", got)
		}
		if got := p.me(key); got != http.StatusOK {
			t.Fatalf("GET /v1/me with the new key: %d", got)
		}
		// The value is shown once: the list shows only its prefix.
		p.b.run("list keys", chromedp.Navigate(p.base+"/portal/keys"))
		list := p.b.text("#keys")
		if strings.Contains(list, key) || !strings.Contains(list, key[:10]) {
			t.Errorf("the key list shows %q for key %s", list, key[:10])
		}
		p.revokeKeyNamed("portal test key")
		if got := p.me(key); got != http.StatusUnauthorized {
			t.Fatalf("GET /v1/me with the revoked key: %d, want 401", got)
		}
	})

	t.Run("without the development outbox its page is 404 and no page links it", func(t *testing.T) {
		p.t = t
		p.b.t = t
		resp, err := http.Get(p.base + "/portal/dev/outbox")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /portal/dev/outbox with no outbox: %d, want 404", resp.StatusCode)
		}
		for _, path := range []string{"/portal/sign-in", "/portal/team"} {
			p.b.run("open "+path, chromedp.Navigate(p.base+path), chromedp.WaitVisible("#title"))
			if n := value(p.b, "count outbox links", chromedp.Evaluate[int](`document.querySelectorAll("a[href*='/dev/outbox']").length`)); n != 0 {
				t.Errorf("%s links the development outbox %d times with no outbox", path, n)
			}
		}
	})

	t.Run("a used or expired sign-in link is refused with a clear page", func(t *testing.T) {
		p.t = t
		p.b.t = t
		p.signOut()
		before := p.box.count()
		p.b.run("ask for a link", chromedp.Navigate(p.base+"/portal/sign-in"), chromedp.SendKeys("#email", p.demo.OwnerEmail),
			chromedp.Click("#send-link"), chromedp.WaitVisible("#message"))
		link := p.box.linkFor(t, p.demo.OwnerEmail, before)
		p.openLink(link)
		p.b.run("open the used link", chromedp.Navigate(link), chromedp.WaitVisible("#message"))
		if got := p.b.text("#message"); !strings.Contains(got, "already been used") {
			p.b.fail("used link page", fmt.Errorf("message %q", got))
		}
		owners, err := p.st.UsersByEmail(ctx, p.demo.OwnerEmail)
		if err != nil || len(owners) != 1 {
			t.Fatalf("owner: %v %v", owners, err)
		}
		past := time.Now().Add(-time.Hour)
		secret, err := p.st.NewSignInLink(ctx, owners[0].ID, past, past.Add(15*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		p.b.run("open an expired link", chromedp.Navigate(p.base+"/portal/sign-in/link?token="+secret), chromedp.WaitVisible("#message"))
		if got := p.b.text("#message"); !strings.Contains(got, "expired") {
			p.b.fail("expired link page", fmt.Errorf("message %q", got))
		}
	})

	t.Run("a member needs the owner's allowance to create keys", func(t *testing.T) {
		p.t = t
		p.b.t = t
		mia, err := p.st.CreateUser(ctx, store.NewUser{AccountID: p.demo.AccountID, Name: "Mia Member", Email: "mia@acme-plumbing.example", Role: "member"})
		if err != nil {
			t.Fatal(err)
		}
		p.signOut()
		p.signIn(mia.Email)
		p.b.run("keys page as a member without the allowance", chromedp.Navigate(p.base+"/portal/keys"), chromedp.WaitVisible("#no-create"))
		forms := value(p.b, "count create forms", chromedp.Evaluate[int](`document.querySelectorAll("#create-key-form").length`))
		if forms != 0 {
			t.Fatal("the keys page offers a member without the allowance a create form")
		}
		// The form posted anyway (same origin) is refused by the same rule.
		status := value(p.b, "post the create form anyway", chromedp.Evaluate[int](`fetch("/portal/keys", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "name=sneaky"}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
		if status != http.StatusForbidden {
			t.Fatalf("a member without the allowance posting the create form got %d, want 403", status)
		}
		// Webhooks are for owners: a member gets a page saying so.
		p.b.run("webhooks page as a member", chromedp.Navigate(p.base+"/portal/webhooks"), chromedp.WaitVisible("#message"))
		if got := p.b.text("#title"); got != "Not allowed" {
			t.Errorf("a member's webhooks page is %q, want Not allowed", got)
		}
		p.signOut()
		p.signIn(p.demo.OwnerEmail)
		p.b.run("grant the allowance on the team page", chromedp.Navigate(p.base+"/portal/team"),
			chromedp.Click(fmt.Sprintf(`tr[data-user=%q] input[name=can_manage_api_keys]`, mia.PublicID)),
			chromedp.Click(fmt.Sprintf(`tr[data-user=%q] .save-allowances`, mia.PublicID)),
			chromedp.WaitVisible("#notice"))
		p.signOut()
		p.signIn(mia.Email)
		p.b.run("open the keys page", chromedp.Navigate(p.base+"/portal/keys"), chromedp.WaitVisible("#create-key-form"))
		offered := value(p.b, "what a member may grant", chromedp.Evaluate[int](`document.querySelectorAll("input[value=transcribe], input[value='auto-transcribe'], input[value='webhooks:manage']").length`))
		if offered != 0 {
			t.Errorf("a member without the transcription allowance is offered %d of transcribe, auto-transcribe, webhooks:manage", offered)
		}
		key := p.createKey("mia's key", "inbox:write")
		if got := p.me(key); got != http.StatusOK {
			t.Fatalf("GET /v1/me with the member's key: %d", got)
		}
		// The owner removes her: her key stops at once and her session ends.
		p.signOut()
		p.signIn(p.demo.OwnerEmail)
		p.b.run("remove the member", chromedp.Navigate(p.base+"/portal/team"),
			chromedp.Click(fmt.Sprintf(`tr[data-user=%q] .remove`, mia.PublicID)), chromedp.WaitVisible("#notice"))
		if got := p.me(key); got != http.StatusUnauthorized {
			t.Fatalf("GET /v1/me with a removed member's key: %d, want 401", got)
		}
	})

	t.Run("a form posted from another origin is refused", func(t *testing.T) {
		p.t = t
		p.b.t = t
		before, err := p.st.AccountAPIKeys(ctx, p.demo.AccountID, 0)
		if err != nil {
			t.Fatal(err)
		}
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/portal/keys"><input name="name" value="planted"></form><script>document.getElementById("f").submit()</script>`, p.base)
		}))
		defer other.Close()
		p.b.run("visit another origin's page that posts to the portal", chromedp.Navigate(other.URL), chromedp.WaitVisible("#message"))
		if got := p.b.text("#message"); !strings.Contains(got, "another site") {
			p.b.fail("cross-origin refusal page", fmt.Errorf("message %q", got))
		}
		after, err := p.st.AccountAPIKeys(ctx, p.demo.AccountID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("a cross-origin form created a key: %d keys before, %d after", len(before), len(after))
		}
	})

	t.Run("signed out, links.dashboard asks to sign in and then opens the call; an unknown call is 404", func(t *testing.T) {
		p.t = t
		p.b.t = t
		calls, _, err := p.st.ListCalls(ctx, p.demo.AccountID, store.CallFilter{Activity: "all", Limit: 1})
		if err != nil || len(calls) == 0 {
			t.Fatalf("a demo call: %v %v", calls, err)
		}
		// links.dashboard is <dashboard-url>/calls/<id>, and --dashboard-url defaults to the portal.
		dashboard := p.base + "/portal/calls/" + calls[0].PublicID
		p.signOut()
		before := p.box.count()
		p.b.run("open links.dashboard signed out", chromedp.Navigate(dashboard), chromedp.WaitVisible("#send-link"),
			chromedp.SendKeys("#email", p.demo.OwnerEmail), chromedp.Click("#send-link"),
			chromedp.WaitVisible("#message"))
		p.openLink(p.box.linkFor(t, p.demo.OwnerEmail, before))
		p.b.run("where the link lands", chromedp.WaitVisible("#outcome"))
		if loc := value(p.b, "location", chromedp.Location()); loc != dashboard {
			t.Fatalf("after signing in the browser is at %s, want %s", loc, dashboard)
		}
		if got := p.b.text("#outcome"); got != calls[0].Disposition {
			t.Errorf("the call page shows outcome %q, want %q", got, calls[0].Disposition)
		}
		// Another account's call answers as an id that does not exist does: GetCall is scoped to
		// the signed-in user's account, as for the API.
		theirs := []store.Call{{PublicID: "call_0000000000000000000000"}}
		p.b.run("open another account's call", chromedp.Navigate(p.base+"/portal/calls/"+theirs[0].PublicID), chromedp.WaitVisible("#message"))
		if got := p.b.text("#title"); got != "Not found" {
			t.Errorf("another account's call shows %q, want Not found", got)
		}
	})

	t.Run("add a webhook to a real HTTPS receiver, test it, read its log, pause it, resend a cancelled delivery", func(t *testing.T) {
		p.t = t
		p.b.t = t
		// Still signed in as the owner from the step before (sign-in links are limited per email).
		p.b.run("add an endpoint", chromedp.Navigate(p.base+"/portal/webhooks"),
			chromedp.SendKeys("#endpoint-name", "Receiver"), chromedp.SendKeys("#endpoint-url", p.hooks.srv.URL+"/hooks"),
			chromedp.Click(`input[name=event][value="call.ended"]`), chromedp.Click("#add-endpoint"), chromedp.WaitVisible("#secret-value"))
		secret := strings.TrimSpace(p.b.text("#secret-value"))
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("the secret shown is %q", secret)
		}
		p.hooks.setSecret(secret)
		endpoint := value(p.b, "the endpoint's id", chromedp.Evaluate[string](`document.getElementById("endpoint").dataset.endpoint`))
		page := p.base + "/portal/webhooks/" + endpoint
		// The list shows it, active; the secret is not on the list.
		p.b.run("list endpoints", chromedp.Navigate(p.base+"/portal/webhooks"))
		if got := p.b.text(fmt.Sprintf(`tr[data-endpoint=%q] .status`, endpoint)); got != "Active" {
			t.Errorf("the new endpoint's status is %q, want Active", got)
		}
		if list := p.b.text("#endpoints"); strings.Contains(list, secret) {
			t.Error("the endpoint list shows the signing secret")
		}

		p.b.run("send a test event", chromedp.Navigate(page), chromedp.Click("#send-test"), chromedp.WaitVisible("#notice"))
		test := p.hooks.await(t, "the test event", func(d delivered) bool { return d.Event == "test" })
		if test.Verified != nil {
			t.Fatalf("the test event's signature did not verify with the secret the portal showed: %v", test.Verified)
		}
		p.awaitRow(page, fmt.Sprintf(`tr[data-event=%q][data-status="succeeded"]`, test.ID), "the test delivery in the log as succeeded")
		p.checkDeliveryPage(endpoint, test)

		p.b.run("pause the endpoint", chromedp.Navigate(page), chromedp.Click("#pause"), chromedp.WaitVisible("#resume"))
		if got := p.b.text("#endpoint-status"); got != "Paused" {
			t.Errorf("after pausing, the status shows %q", got)
		}
		// A paused endpoint takes no test event: the page says why instead of failing.
		status := value(p.b, "post a test to a paused endpoint", chromedp.Evaluate[int](fmt.Sprintf(`fetch("/portal/webhooks/%s/test", {method: "POST"}).then(r => r.status)`, endpoint),
			chromedp.EvalAwaitPromise))
		if status != http.StatusConflict {
			t.Errorf("a test event to a paused endpoint answered %d, want 409", status)
		}

		// A call ends while the endpoint is paused: its delivery is recorded as cancelled, not sent.
		p.reportCall(t)
		cancelled := `tr[data-status="cancelled"]`
		p.awaitRow(page, cancelled, "the paused endpoint's call.ended delivery recorded as cancelled")
		eventID := value(p.b, "the cancelled delivery's event", chromedp.Evaluate[string](`document.querySelector('tr[data-status="cancelled"]').dataset.event`))
		if n := p.hooks.count(func(d delivered) bool { return d.ID == eventID }); n != 0 {
			t.Fatalf("a paused endpoint received the event %d times", n)
		}

		p.b.run("set the endpoint active", chromedp.Click("#resume"), chromedp.WaitVisible("#pause"))
		p.b.run("resend the cancelled delivery", chromedp.Click(fmt.Sprintf(`tr[data-event=%q][data-status="cancelled"] .resend`, eventID)),
			chromedp.WaitVisible("#notice"))
		resent := p.hooks.await(t, "the resent call.ended", func(d delivered) bool { return d.ID == eventID })
		if resent.Event != "call.ended" || resent.Verified != nil {
			t.Fatalf("the resent delivery is %+v", resent)
		}
		p.awaitRow(page, fmt.Sprintf(`tr[data-event=%q][data-status="succeeded"]`, eventID), "the resent delivery in the log as succeeded")
		p.checkDeliveryPage(endpoint, resent)
		p.checkLogFilter(endpoint, "call.ended", "cancelled")
		p.checkLogFilter(endpoint, "test", "succeeded")
		p.checkRateLimit(endpoint)
		p.checkRecover(endpoint)
		p.checkCatalogue()
	})

	t.Run("the calls list leads to a call page whose audio player plays the recording", func(t *testing.T) {
		p.t = t
		p.b.t = t
		calls, _, err := p.st.ListCalls(ctx, p.demo.AccountID, store.CallFilter{Activity: "all", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var recorded *store.Call
		for i := range calls {
			if calls[i].RecordingPublicID != nil {
				recorded = &calls[i]
				break
			}
		}
		if recorded == nil {
			t.Fatal("the demo account has no recorded call")
		}
		p.b.run("open the calls list", chromedp.Navigate(p.base+"/portal/calls?activity=all"), chromedp.WaitVisible("#calls"))
		rows := value(p.b, "count rows", chromedp.Evaluate[int](`document.querySelectorAll("#calls tr[data-call]").length`))
		if rows != min(len(calls), 25) {
			t.Errorf("the calls list shows %d rows, want %d", rows, min(len(calls), 25))
		}
		p.b.run("open the recorded call", chromedp.Click(fmt.Sprintf(`tr[data-call=%q] a`, recorded.PublicID)), chromedp.WaitVisible("#recording"))
		src := value(p.b, "the audio's address", chromedp.Evaluate[string](`document.getElementById("recording").src`))
		resp, err := http.Get(src)
		if err != nil {
			t.Fatal(err)
		}
		audio, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "audio/") || !bytes.HasPrefix(audio, []byte("RIFF")) {
			t.Fatalf("the audio player's src answered %d %s with %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(audio))
		}
		// The status filter narrows the list to that outcome.
		p.b.run("filter by outcome", chromedp.Navigate(p.base+"/portal/calls?activity=all&status="+recorded.Disposition), chromedp.WaitVisible("#calls"))
		other := value(p.b, "rows of another outcome", chromedp.Evaluate[int](fmt.Sprintf(
			`[...document.querySelectorAll("#calls tr[data-call] td:nth-child(4)")].filter(td => td.textContent !== %q).length`, recorded.Disposition)))
		if other != 0 {
			t.Errorf("filtering by %s still lists %d calls of another outcome", recorded.Disposition, other)
		}
	})

	t.Run("a voicemail's transcription shows its estimate first, then starts", func(t *testing.T) {
		p.t = t
		p.b.t = t
		const caller = "+447700900654"
		p.report(t, map[string]any{"disposition": "voicemail", "from": caller, "duration_seconds": 30,
			"recording": map[string]any{"kind": "voicemail", "duration_seconds": 25, "audio_base64": base64.StdEncoding.EncodeToString(seed.ToneWAV(2))}})
		calls, _, err := p.st.ListCalls(ctx, p.demo.AccountID, store.CallFilter{Activity: "all", Search: caller, SearchDigits: store.CallSearchDigits(caller), Limit: 1})
		if err != nil || len(calls) != 1 || calls[0].RecordingPublicID == nil {
			t.Fatalf("the reported voicemail: %v %v", calls, err)
		}
		p.b.run("ask to transcribe", chromedp.Navigate(p.base+"/portal/calls/"+calls[0].PublicID), chromedp.Click("#transcribe"),
			chromedp.WaitVisible("#estimate"))
		if got := p.b.text("#estimate-minutes"); got != "1 minute" {
			t.Errorf("the estimate for 25 s of audio says %q, want 1 minute", got)
		}
		p.b.run("start the transcription", chromedp.Click("#start-transcription"), chromedp.WaitVisible("#notice"))
		if got := p.b.text("#notice"); !strings.Contains(got, "transcription has started") {
			t.Errorf("after starting, the call page says %q", got)
		}
		if status, err := p.st.GetTranscript(ctx, p.demo.AccountID, mustRecordingID(t, p.st, p.demo.AccountID, *calls[0].RecordingPublicID)); err != nil || status.Status == "" {
			t.Errorf("no transcript was started: %+v %v", status, err)
		}
	})

	t.Run("the balance page shows the balance in pounds", func(t *testing.T) {
		p.t = t
		p.b.t = t
		acct, err := p.st.GetAccount(ctx, p.demo.AccountID)
		if err != nil {
			t.Fatal(err)
		}
		p.b.run("open the balance page", chromedp.Navigate(p.base+"/portal/balance"), chromedp.WaitVisible("#balance"))
		if want := fmt.Sprintf("£%d.%02d", acct.BalancePence/100, acct.BalancePence%100); p.b.text("#balance") != want || acct.BalancePence <= 0 {
			t.Errorf("the balance page shows %q; the account has %d pence", p.b.text("#balance"), acct.BalancePence)
		}
		entries, _, err := p.st.ListLedgerEntries(ctx, p.demo.AccountID, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		rows := value(p.b, "ledger rows", chromedp.Evaluate[int](`document.querySelectorAll("#ledger tbody tr").length`))
		if len(entries) == 0 || rows != len(entries) {
			t.Errorf("the ledger shows %d rows for %d entries", rows, len(entries))
		}
	})
}

// awaitRow reloads page until selector matches something on it.
func (p *portalTest) awaitRow(page, selector, what string) {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p.b.run("open "+page, chromedp.Navigate(page), chromedp.WaitVisible("#deliveries"))
		n := value(p.b, "look for "+what, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			p.b.fail(what, fmt.Errorf("nothing matches %s after 60 s", selector))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func mustRecordingID(t *testing.T, st *store.Store, accountID int64, publicID string) int64 {
	t.Helper()
	rec, err := st.GetRecording(context.Background(), accountID, publicID)
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

// reportCall reports an unanswered call to the demo account's first number, as the telephony
// platform does; it produces a call.ended event.
func (p *portalTest) reportCall(t *testing.T) {
	t.Helper()
	p.report(t, nil)
}

// report reports a call to the demo account's first number, with the fields of change.
func (p *portalTest) report(t *testing.T, change map[string]any) {
	t.Helper()
	nums, err := p.st.ListNumbers(context.Background(), p.demo.AccountID)
	if err != nil || len(nums) == 0 {
		t.Fatalf("the demo account's numbers: %v %v", nums, err)
	}
	started := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	// The reference is unique per report: two reports in the same second must not read as one sent twice.
	report := map[string]any{"platform_ref": fmt.Sprintf("portal-test-%d", time.Now().UnixNano()), "to": nums[0].E164,
		"from": "+447700900321", "disposition": "no-answer", "started_at": started, "duration_seconds": 20, "talk_seconds": 0}
	maps.Copy(report, change)
	body, _ := json.Marshal(report)
	req, _ := http.NewRequest(http.MethodPost, p.platform+"/platform/v1/calls", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+platformToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("report a call: %d %s", resp.StatusCode, msg)
	}
}
