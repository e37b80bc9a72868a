package portal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// blankPhoneRows is how many empty phone rows the edit form offers for new numbers.
const blankPhoneRows = 2

// contactForm is the contact edit form: the fields of PUT /v1/contacts/{contact} a person
// edits, and a message per field the API's rules refused.
type contactForm struct {
	PublicID                                                             string
	DisplayName, FirstName, LastName, Company, Email, ExternalURL, Notes string
	Phones                                                               []phoneRow
	// Primary is the index of the primary phone row (-1: none).
	Primary int
	Errors  map[string]string
	// SourceCreatedAt and SourceUpdatedAt are kept as they are: the writing system's times.
	SourceCreatedAt, SourceUpdatedAt *time.Time
}

type phoneRow struct {
	Number, Label string
	// Error is the API's message about this row, if any.
	Error string
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// contactFormOf is the form filled from a stored contact, with blank rows for new numbers.
func contactFormOf(c store.Contact) contactForm {
	f := contactForm{PublicID: c.PublicID, DisplayName: c.DisplayName, FirstName: deref(c.FirstName), LastName: deref(c.LastName),
		Company: deref(c.Company), Email: deref(c.Email), ExternalURL: deref(c.ExternalURL), Notes: deref(c.Notes), Primary: -1, Errors: map[string]string{},
		SourceCreatedAt: c.SourceCreatedAt, SourceUpdatedAt: c.SourceUpdatedAt}
	for i, ph := range c.Phones {
		number := ph.RawNumber
		if number == "" {
			number = ph.E164
		}
		f.Phones = append(f.Phones, phoneRow{Number: number, Label: ph.Label})
		if ph.IsPrimary && f.Primary < 0 {
			f.Primary = i
		}
	}
	for range blankPhoneRows {
		f.Phones = append(f.Phones, phoneRow{})
	}
	return f
}

// readContactForm reads the posted form over the stored contact's form (which keeps the
// writing system's times).
func readContactForm(form url.Values, stored contactForm) contactForm {
	f := stored
	f.DisplayName, f.FirstName, f.LastName = form.Get("display_name"), form.Get("first_name"), form.Get("last_name")
	f.Company, f.Email, f.ExternalURL, f.Notes = form.Get("company"), form.Get("email"), form.Get("external_url"), form.Get("notes")
	numbers, labels := form["phone_number"], form["phone_label"]
	f.Phones = nil
	for i := range max(len(numbers), len(labels)) {
		var row phoneRow
		if i < len(numbers) {
			row.Number = numbers[i]
		}
		if i < len(labels) {
			row.Label = labels[i]
		}
		f.Phones = append(f.Phones, row)
	}
	f.Primary = -1
	if n, err := strconv.Atoi(form.Get("primary")); err == nil && n >= 0 && n < len(f.Phones) {
		f.Primary = n
	}
	return f
}

// contactPayload is the form as the API's write payload, and for each phone of the payload
// the form row it came from. Rows with neither number nor label are left out (a row emptied
// removes its number).
func contactPayload(f contactForm) ([]byte, []int) {
	type phone struct {
		Number    string `json:"number"`
		Label     string `json:"label"`
		IsPrimary bool   `json:"is_primary"`
	}
	p := map[string]any{"display_name": f.DisplayName, "first_name": f.FirstName, "last_name": f.LastName, "company": f.Company,
		"email": f.Email, "external_url": f.ExternalURL, "notes": f.Notes}
	for key, t := range map[string]*time.Time{"source_created_at": f.SourceCreatedAt, "source_updated_at": f.SourceUpdatedAt} {
		if t != nil {
			p[key] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	phones, rows := []phone{}, []int{}
	for i, r := range f.Phones {
		if strings.TrimSpace(r.Number) == "" && strings.TrimSpace(r.Label) == "" {
			continue
		}
		phones = append(phones, phone{Number: r.Number, Label: r.Label, IsPrimary: i == f.Primary})
		rows = append(rows, i)
	}
	p["phones"] = phones
	raw, _ := json.Marshal(p)
	return raw, rows
}

var phoneField = regexp.MustCompile(`^phones\.(\d+)\.`)

// placeErrors puts the API's messages next to the form's fields: a phone's on its row, the
// others by field name (the first message of each).
func placeErrors(f *contactForm, errs map[string][]string, rows []int) {
	f.Errors = map[string]string{}
	for field, msgs := range errs {
		if len(msgs) == 0 {
			continue
		}
		if m := phoneField.FindStringSubmatch(field); m != nil {
			if i, _ := strconv.Atoi(m[1]); i < len(rows) {
				f.Phones[rows[i]].Error = msgs[0]
				continue
			}
		}
		f.Errors[field] = msgs[0]
	}
}

// mayEditContacts: what a key of the user's own could do (contacts:write), as for the API.
func mayEditContacts(u store.User) bool { return mayChange(u, auth.ContactsWrite) }

func (p *Portal) editContact(w http.ResponseWriter, r *http.Request, v viewer) {
	if !mayEditContacts(v.User) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "You may not change contacts."})
		return
	}
	c, err := p.store.GetContact(r.Context(), v.Account.ID, r.PathValue("contact"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	form := contactFormOf(c)
	p.render(w, r, http.StatusOK, "contact-edit.html", page{Title: "Edit " + c.DisplayName, Viewer: &v, ContactForm: &form})
}

// saveContact replaces the contact's details and phones as PUT /v1/contacts/{contact} does:
// the API's checks (apiserver.CheckContactWrite) and the same store call.
func (p *Portal) saveContact(w http.ResponseWriter, r *http.Request, v viewer) {
	if !mayEditContacts(v.User) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "You may not change contacts."})
		return
	}
	ctx := r.Context()
	c, err := p.store.GetContact(ctx, v.Account.ID, r.PathValue("contact"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	_ = r.ParseForm()
	form := readContactForm(r.PostForm, contactFormOf(c))
	raw, rows := contactPayload(form)
	in, errs := apiserver.CheckContactWrite(raw)
	if len(errs) > 0 {
		placeErrors(&form, errs, rows)
		p.render(w, r, http.StatusUnprocessableEntity, "contact-edit.html", page{Title: "Edit " + c.DisplayName, Viewer: &v, ContactForm: &form,
			Error: "The contact was not saved: see the fields marked below."})
		return
	}
	saved, err := p.store.ReplaceContact(ctx, v.Account.ID, c.PublicID, in, p.cfg.Clock.Now())
	if err != nil {
		p.fail(w, r, err)
		return
	}
	done := "saved"
	if dropped := len(rows) - len(saved.Phones); dropped > 0 {
		done = fmt.Sprintf("saved-dropped-%d", dropped)
	}
	http.Redirect(w, r, "/portal/contacts?search="+url.QueryEscape(saved.DisplayName)+"&done="+done, http.StatusSeeOther)
}

// contactNotice words the outcome of a save for the contacts list.
func contactNotice(done string) string {
	switch {
	case done == "saved":
		return "The contact is saved."
	case strings.HasPrefix(done, "saved-dropped-"):
		n, err := strconv.Atoi(strings.TrimPrefix(done, "saved-dropped-"))
		if err != nil || n < 1 {
			return ""
		}
		if n == 1 {
			return "The contact is saved. 1 number could not be read as a phone number and was left out."
		}
		return fmt.Sprintf("The contact is saved. %d numbers could not be read as phone numbers and were left out.", n)
	}
	return ""
}
