package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// apiBlocked is a blocked caller as GET /v1/blocked-callers answers it.
type apiBlocked struct {
	PublicID string `json:"public_id"`
	E164     string `json:"e164"`
	Action   string `json:"action"`
	Label    string `json:"label"`
	Number   *struct {
		PublicID string `json:"public_id"`
	} `json:"number"`
}

func (p *portalTest) apiBlocked() map[string]apiBlocked {
	p.t.Helper()
	var list struct{ Data []apiBlocked }
	p.api("/v1/blocked-callers", &list)
	out := map[string]apiBlocked{}
	for _, b := range list.Data {
		out[b.E164] = b
	}
	return out
}

// postStatus posts a form body to path from the current page (same origin) and returns the status.
func (p *portalTest) postStatus(path, body string) int {
	p.t.Helper()
	return value(p.b, "post "+path, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q}).then(r => r.status)`, path, body),
		chromedp.EvalAwaitPromise))
}

func TestPortalInboxEdits(t *testing.T) {
	p := startPortal(t)
	ctx := context.Background()
	p.signIn(p.demo.OwnerEmail)

	t.Run("an owner blocks a caller on one number and unblocks them; bad input is refused next to its field", func(t *testing.T) {
		p.t, p.b.t = t, t
		numbers, err := p.st.ListNumbers(ctx, p.demo.AccountID)
		if err != nil || len(numbers) == 0 {
			t.Fatalf("the demo's numbers: %v %v", numbers, err)
		}
		on := numbers[len(numbers)-1]
		p.b.run("block a caller with a number that is not one", chromedp.Navigate(p.base+"/portal/blocked"),
			chromedp.SendKeys("#block-number", "call me maybe"), chromedp.Click("#block-caller"), chromedp.WaitVisible("#block-number-error"))
		if got := p.b.text("#block-number-error"); got != "The number must be a phone number." {
			t.Errorf("a number that is not one is refused with %q", got)
		}
		if inv := value(p.b, "aria-invalid", chromedp.Evaluate[string](`document.getElementById("block-number").getAttribute("aria-invalid")`)); inv != "true" {
			t.Errorf("the refused field's aria-invalid is %q", inv)
		}
		status := p.postStatus("/portal/blocked", "number=notanumber&action=reject")
		if status != http.StatusUnprocessableEntity {
			t.Errorf("posting a number that is not one answered %d, want 422", status)
		}
		p.checkNarrow("blocked callers with a refused number", false)

		p.b.run("block 07700 900999 on one number, to voicemail", chromedp.Navigate(p.base+"/portal/blocked"),
			chromedp.SendKeys("#block-number", "07700 900999"), chromedp.Click(`input[name=action][value=voicemail]`),
			chromedp.SetValue("#block-on", on.PublicID), chromedp.SendKeys("#block-label", "Keeps calling"),
			chromedp.Click("#block-caller"), chromedp.WaitVisible("#notice"))
		added, ok := p.apiBlocked()["+447700900999"]
		if !ok || added.Action != "voicemail" || added.Label != "Keeps calling" || added.Number == nil || added.Number.PublicID != on.PublicID {
			t.Fatalf("GET /v1/blocked-callers shows the new block as %+v (listed %v); want voicemail on %s labelled Keeps calling", added, ok, on.PublicID)
		}
		if n := value(p.b, "the new block listed", chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('#blocked li[data-blocked=%q]').length`, added.PublicID))); n != 1 {
			t.Errorf("the page lists the new block %d times", n)
		}
		p.checkNarrow("blocked callers", true)

		p.b.run("unblock it", chromedp.Navigate(p.base+"/portal/blocked"),
			chromedp.Click(fmt.Sprintf(`li[data-blocked=%q] .unblock`, added.PublicID)), chromedp.WaitVisible("#notice"))
		if _, still := p.apiBlocked()["+447700900999"]; still {
			t.Error("GET /v1/blocked-callers still lists the caller after Unblock")
		}
		if status := p.postStatus("/portal/blocked/"+added.PublicID+"/remove", ""); status != http.StatusNotFound {
			t.Errorf("unblocking a removed block answered %d, want 404", status)
		}
	})

	t.Run("edit a contact: the API's refusal next to the field, then the saved contact in the API's list", func(t *testing.T) {
		p.t, p.b.t = t, t
		var list struct{ Data []apiContact }
		p.api("/v1/contacts?per_page=1", &list)
		if len(list.Data) == 0 {
			t.Fatal("the demo account has no contacts")
		}
		c := list.Data[0]
		edit := fmt.Sprintf(`li[data-contact=%q] a.edit-contact`, c.PublicID)
		p.b.run("open the contact's edit form", chromedp.Navigate(p.base+"/portal/contacts?search="+url.QueryEscape(c.DisplayName)),
			chromedp.Click(edit), chromedp.WaitVisible("#contact-form"))
		p.b.run("save an email that is not one", chromedp.SetValue("#contact-email", "not an address"),
			chromedp.Click("#save-contact"), chromedp.WaitVisible("#contact-email-error"))
		want := p.apiRefusal(c.PublicID, map[string]any{"display_name": c.DisplayName, "email": "not an address", "phones": []any{}})
		if got := p.b.text("#contact-email-error"); want["email"] == "" || got != want["email"] {
			t.Errorf("the form refuses the email with %q; PUT /v1/contacts/{contact} with %q", got, want["email"])
		}
		p.checkNarrow("contact edit with a refused email", false)

		p.b.run("fix the email, change the company, add a number and make it primary",
			chromedp.SetValue("#contact-email", "ada@example.com"), chromedp.SetValue("#contact-company", "Analytical Engines"),
			chromedp.SetValue(fmt.Sprintf("#phone-number-%d", len(c.Phones)), "07700 900555"),
			chromedp.SetValue(fmt.Sprintf("#phone-label-%d", len(c.Phones)), "workshop"),
			chromedp.Click(fmt.Sprintf(`input[name=primary][value="%d"]`, len(c.Phones))),
			chromedp.Click("#save-contact"), chromedp.WaitVisible("#notice"))
		var after struct{ Data []apiContact }
		p.api("/v1/contacts?search="+url.QueryEscape(c.DisplayName), &after)
		var saved *apiContact
		for i := range after.Data {
			if after.Data[i].PublicID == c.PublicID {
				saved = &after.Data[i]
			}
		}
		if saved == nil {
			t.Fatalf("GET /v1/contacts no longer finds %s", c.PublicID)
		}
		if saved.Email == nil || *saved.Email != "ada@example.com" || saved.Company == nil || *saved.Company != "Analytical Engines" ||
			saved.DisplayName != c.DisplayName || len(saved.Phones) != len(c.Phones)+1 {
			t.Errorf("GET /v1/contacts shows the saved contact as %+v", saved)
		}
		var primary []string
		for _, ph := range saved.Phones {
			if ph.IsPrimary {
				primary = append(primary, ph.E164+" "+ph.Label)
			}
		}
		if strings.Join(primary, ",") != "+447700900555 workshop" {
			t.Errorf("the primary numbers are %v; want the one added, +447700900555 workshop", primary)
		}
		p.b.run("the edit form again", chromedp.Navigate(p.base+"/portal/contacts/"+c.PublicID+"/edit"), chromedp.WaitVisible("#contact-form"))
		p.checkNarrow("contact edit", true)
	})

	t.Run("a member sees no block form and may not block", func(t *testing.T) {
		p.t, p.b.t = t, t
		member, err := p.st.CreateUser(ctx, store.NewUser{AccountID: p.demo.AccountID, Name: "Bo Member", Email: "bo@acme-plumbing.example", Role: "member",
			CanManageAPIKeys: true, CanTranscribe: true})
		if err != nil {
			t.Fatal(err)
		}
		p.signOut()
		p.signIn(member.Email)
		p.b.run("the blocked callers as a member", chromedp.Navigate(p.base+"/portal/blocked"), chromedp.WaitVisible("#blocked"))
		if n := value(p.b, "block forms", chromedp.Evaluate[int](`document.querySelectorAll("#block-form, .unblock").length`)); n != 0 {
			t.Errorf("a member is offered %d block or unblock controls", n)
		}
		before := len(p.apiBlocked())
		if status := p.postStatus("/portal/blocked", "number=07700900888&action=reject"); status != http.StatusForbidden {
			t.Errorf("a member posting the block form got %d, want 403", status)
		}
		if after := len(p.apiBlocked()); after != before {
			t.Errorf("a member's refused post changed the blocked callers: %d before, %d after", before, after)
		}
		p.signOut()
		p.signIn(p.demo.OwnerEmail)
	})
}

// apiContact is a contact as GET /v1/contacts answers it.
type apiContact struct {
	PublicID    string  `json:"public_id"`
	DisplayName string  `json:"display_name"`
	Company     *string `json:"company"`
	Email       *string `json:"email"`
	Phones      []struct {
		E164      string `json:"e164"`
		Label     string `json:"label"`
		IsPrimary bool   `json:"is_primary"`
	} `json:"phones"`
}

// apiRefusal sends body to PUT /v1/contacts/{contact} and returns the first message of each
// field of its 422 (the contact is left as it was).
func (p *portalTest) apiRefusal(contact string, body map[string]any) map[string]string {
	p.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPut, p.base+"/v1/contacts/"+contact, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+p.demo.OwnerKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct{ Errors map[string][]string }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusUnprocessableEntity {
		p.t.Fatalf("PUT /v1/contacts/%s answered %d (%v); want 422", contact, resp.StatusCode, err)
	}
	out := map[string]string{}
	for field, msgs := range answer.Errors {
		out[field] = msgs[0]
	}
	return out
}
