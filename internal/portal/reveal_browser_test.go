package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// An owner has an endpoint's signing secret shown again: it is the secret in force (the one
// shown at creation, then the rotated one), and each showing is listed on the page with who
// and when; a member's request is refused and not listed.
func TestPortalRevealsTheSigningSecret(t *testing.T) {
	p := startPortal(t)
	ctx := context.Background()
	p.signIn(p.demo.OwnerEmail)
	p.b.run("add an endpoint", chromedp.Navigate(p.base+"/portal/webhooks"),
		chromedp.SendKeys("#endpoint-name", "Reveal"), chromedp.SendKeys("#endpoint-url", p.hooks.srv.URL+"/hooks"),
		chromedp.Click(`input[name=event][value="call.ended"]`), chromedp.Click("#add-endpoint"), chromedp.WaitVisible("#secret-value"))
	created := strings.TrimSpace(p.b.text("#secret-value"))
	endpoint := value(p.b, "the endpoint's id", chromedp.Evaluate[string](`document.getElementById("endpoint").dataset.endpoint`))
	page := p.base + "/portal/webhooks/" + endpoint
	p.b.run("the endpoint page", chromedp.Navigate(page), chromedp.WaitVisible("#no-reveals"))
	if n := value(p.b, "secrets on the page", chromedp.Evaluate[int](`document.querySelectorAll("#secret-value").length`)); n != 0 {
		t.Fatal("the endpoint page shows the secret before anyone asked")
	}

	reveal := func(want string, shown int) {
		t.Helper()
		p.b.run("show the signing secret", chromedp.Navigate(page), chromedp.Click("#reveal-secret"), chromedp.WaitVisible("#secret-value"))
		if got := strings.TrimSpace(p.b.text("#secret-value")); got != want {
			t.Errorf("the secret shown again is %q; the secret in force is %q", got, want)
		}
		who := value(p.b, "the showings listed", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#secret-reveals li.reveal")].map(li => li.dataset.email)`))
		if len(who) != shown {
			t.Fatalf("the page lists %d showings (%v); want %d", len(who), who, shown)
		}
		for _, email := range who {
			if email != p.demo.OwnerEmail {
				t.Errorf("a showing is listed as by %q; the owner %q asked", email, p.demo.OwnerEmail)
			}
		}
	}
	reveal(created, 1)
	p.checkNarrow("endpoint with its secret shown again", true)
	p.b.run("rotate the secret", chromedp.Navigate(page), chromedp.Click("#rotate"), chromedp.WaitVisible("#secret-value"))
	rotated := strings.TrimSpace(p.b.text("#secret-value"))
	if rotated == created {
		t.Fatal("rotating did not change the secret")
	}
	reveal(rotated, 2)

	member, err := p.st.CreateUser(ctx, store.NewUser{AccountID: p.demo.AccountID, Name: "Rae Member", Email: "rae@acme-plumbing.example", Role: "member",
		CanManageAPIKeys: true, CanTranscribe: true})
	if err != nil {
		t.Fatal(err)
	}
	p.signOut()
	p.signIn(member.Email)
	p.b.run("the portal as a member", chromedp.Navigate(p.base+"/portal/keys"))
	if status := p.postStatus("/portal/webhooks/"+endpoint+"/reveal", ""); status != http.StatusForbidden {
		t.Errorf("a member asking for the secret got %d, want 403", status)
	}
	p.signOut()
	p.signIn(p.demo.OwnerEmail)
	p.b.run("the endpoint page again", chromedp.Navigate(page), chromedp.WaitVisible("#secret-reveals"))
	if n := value(p.b, "showings", chromedp.Evaluate[int](`document.querySelectorAll("#secret-reveals li.reveal").length`)); n != 2 {
		t.Errorf("after a member's refused request the page lists %d showings; want 2", n)
	}
}
