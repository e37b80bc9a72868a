package portal

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestContactFormRoundTrip(t *testing.T) {
	made := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	company := "Engines Ltd"
	c := store.Contact{PublicID: "con_1", DisplayName: "Ada", Company: &company, SourceCreatedAt: &made,
		Phones: []store.ContactPhone{{E164: "+447700900001", RawNumber: "07700 900001", Label: "mobile"}, {E164: "+442079460002", IsPrimary: true}}}
	stored := contactFormOf(c)
	if len(stored.Phones) != 2+blankPhoneRows || stored.Phones[0].Number != "07700 900001" || stored.Phones[1].Number != "+442079460002" || stored.Primary != 1 {
		t.Fatalf("the form of the stored contact is %+v", stored)
	}
	// The second number emptied (removed), a new one in the last row, made primary.
	form := url.Values{"display_name": {"Ada Lovelace"}, "company": {"Engines Ltd"}, "email": {"not an address"},
		"phone_number": {"07700 900001", "", "", "+44 20 7946 0003"}, "phone_label": {"mobile", "", "", "office"}, "primary": {"3"}}
	f := readContactForm(form, stored)
	raw, rows := contactPayload(f)
	if !reflect.DeepEqual(rows, []int{0, 3}) {
		t.Errorf("payload phones come from rows %v, want [0 3]", rows)
	}
	var p struct {
		SourceCreatedAt string `json:"source_created_at"`
		Phones          []struct {
			Number    string
			Label     string
			IsPrimary bool `json:"is_primary"`
		}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.SourceCreatedAt != "2025-01-02T03:04:05Z" || len(p.Phones) != 2 || p.Phones[0].IsPrimary || !p.Phones[1].IsPrimary || p.Phones[1].Label != "office" {
		t.Errorf("the payload is %s", raw)
	}
	_, errs := apiserver.CheckContactWrite(raw)
	placeErrors(&f, errs, rows)
	if f.Errors["email"] != "The email must be an email address." || len(f.Errors) != 1 {
		t.Errorf("errors placed: %v (from %v)", f.Errors, errs)
	}

	// A phone's refusal lands on the row it came from.
	form.Set("email", "")
	form["phone_label"] = []string{"mobile", "", "", strings.Repeat("x", 51)}
	f = readContactForm(form, stored)
	raw, rows = contactPayload(f)
	_, errs = apiserver.CheckContactWrite(raw)
	placeErrors(&f, errs, rows)
	if f.Phones[3].Error != "The phones.1.label may not be longer than 50 characters." || len(f.Errors) != 0 {
		t.Errorf("a long label of row 3: row errors %q, others %v (from %v)", f.Phones[3].Error, f.Errors, errs)
	}
}

func TestContactNotice(t *testing.T) {
	for done, want := range map[string]string{
		"saved":           "The contact is saved.",
		"saved-dropped-1": "The contact is saved. 1 number could not be read as a phone number and was left out.",
		"saved-dropped-2": "The contact is saved. 2 numbers could not be read as phone numbers and were left out.",
		"saved-dropped-x": "",
		"other":           "",
	} {
		if got := contactNotice(done); got != want {
			t.Errorf("contactNotice(%q) = %q, want %q", done, got, want)
		}
	}
}

// The edit page renders a stored contact, and a refused one with each message next to its
// field, which points at it.
func TestContactEditPageRenders(t *testing.T) {
	pages := parsePages()
	f := contactFormOf(store.Contact{PublicID: "con_1", DisplayName: "Ada"})
	var buf bytes.Buffer
	if err := pages["contact-edit.html"].ExecuteTemplate(&buf, "layout", page{Title: "Edit Ada", ContactForm: &f}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "aria-invalid") {
		t.Error("a form with no refusal marks a field invalid")
	}
	f.Errors = map[string]string{"email": "The email must be an email address."}
	f.Phones[1].Error = "The phones.0.label may not be longer than 50 characters."
	buf.Reset()
	if err := pages["contact-edit.html"].ExecuteTemplate(&buf, "layout", page{Title: "Edit Ada", ContactForm: &f}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`aria-invalid="true" aria-describedby="contact-email-error"`,
		`id="contact-email-error">The email must be an email address.</p>`,
		`id="phone-number-1" type="tel" name="phone_number" value="" aria-invalid="true" aria-describedby="phone-error-1"`,
		`id="phone-error-1">The phones.0.label may not be longer than 50 characters.</p>`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the refused form lacks %s", want)
		}
	}
}
