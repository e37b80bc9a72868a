package portal_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
	"github.com/switchboard-dev/switchboard/internal/devoutbox/smtpd"
	"github.com/switchboard-dev/switchboard/internal/serve"
)

// startDevOutboxPortal starts the service configured as `make run` configures it: its mail goes
// to the development outbox's SMTP server, and the portal shows the outbox.
func startDevOutboxPortal(t *testing.T) *portalTest {
	box := devoutbox.New(devoutbox.DefaultKeep, nil)
	srv, err := smtpd.Start("127.0.0.1:0", box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return startPortalWith(t, 1, func(o *serve.Options) {
		o.Portal.DevOutbox = box
		o.Webhooks.SMTPAddr = srv.Addr()
	})
}

// openOutboxMail opens the outbox from the header's link, as a developer would, waits for the
// newest email to `to` whose subject is subject, and clicks the sign-in link in it.
func (p *portalTest) openOutboxMail(to, subject string) {
	p.t.Helper()
	find := fmt.Sprintf(`(() => {
		const m = [...document.querySelectorAll("li.outbox-message")].find(li =>
			li.querySelector(".muted").textContent.includes("To %s ") && li.querySelector("h2").textContent === %q);
		return m ? m.dataset.message : "";
	})()`, to, subject)
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.b.run("open the outbox from the header", chromedp.Click("#dev-outbox-link"), chromedp.WaitVisible("#outbox-banner"))
		if id := value(p.b, "find the email to "+to, chromedp.Evaluate[string](find)); id != "" {
			p.b.run("follow the link in the email", chromedp.Click(fmt.Sprintf(`li[data-message=%q] pre a[href*="/portal/sign-in/link?token="]`, id)),
				chromedp.WaitVisible("#continue"), chromedp.Click("#continue"), chromedp.WaitVisible("#sign-out"))
			return
		}
		if time.Now().After(deadline) {
			p.b.fail("the outbox", fmt.Errorf("no %q email to %s within 30 s", subject, to))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestDevOutboxInBrowser(t *testing.T) {
	p := startDevOutboxPortal(t)
	const subject = "Your Switchboard sign-in link"

	// Signed out, every page links the outbox; the sign-in link asked for lands there and works.
	p.b.run("ask for a sign-in link", chromedp.Navigate(p.base+"/portal/sign-in"), chromedp.SendKeys("#email", p.demo.OwnerEmail),
		chromedp.Click("#send-link"), chromedp.WaitVisible("#message"))
	p.openOutboxMail(p.demo.OwnerEmail, subject)
	if got := p.b.text("header .who"); !strings.Contains(got, p.demo.OwnerEmail) {
		t.Fatalf("after the outbox's sign-in link the header shows %q, want the owner %s", got, p.demo.OwnerEmail)
	}

	// The owner invites a member; the invitation lands in the outbox, not in any mailbox.
	const member = "nia.new@acme-plumbing.example"
	p.b.run("invite a member", chromedp.Navigate(p.base+"/portal/team"), chromedp.SendKeys("#invite-name", "Nia New"),
		chromedp.SendKeys("#invite-email", member), chromedp.Click("#invite"), chromedp.WaitVisible("#notice"))
	if got := p.b.text("#notice"); !strings.Contains(got, "Invited "+member) {
		t.Fatalf("the invite notice is %q", got)
	}
	p.b.run("the outbox says nothing was sent", chromedp.Click("#dev-outbox-link"), chromedp.WaitVisible("#outbox-banner"))
	if got := p.b.text("#outbox-banner"); !strings.Contains(got, "Development outbox: these e-mails were not sent") {
		t.Errorf("the outbox banner is %q", got)
	}
	if got := p.box.count(); got != 0 {
		t.Errorf("%d emails reached the other SMTP server; all should be in the outbox", got)
	}

	// The member follows the invitation from the outbox and is signed in as themselves.
	p.signOut()
	p.openOutboxMail(member, subject)
	if got := p.b.text("header .who"); !strings.Contains(got, member) {
		t.Fatalf("after the invitation's link the header shows %q, want the member %s", got, member)
	}
	resp, err := http.Get(p.base + "/portal/dev/outbox")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /portal/dev/outbox with the outbox on: %d, want 200", resp.StatusCode)
	}
}
