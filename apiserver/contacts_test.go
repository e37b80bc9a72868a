package apiserver_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// contactJSON is a contact as the API shows it.
type contactJSON struct {
	PublicID        string  `json:"public_id"`
	DisplayName     string  `json:"display_name"`
	FirstName       *string `json:"first_name"`
	LastName        *string `json:"last_name"`
	Company         *string `json:"company"`
	Email           *string `json:"email"`
	Notes           *string `json:"notes"`
	Source          string  `json:"source"`
	ExternalID      *string `json:"external_id"`
	SourceCreatedAt *string `json:"source_created_at"`
	SourceUpdatedAt *string `json:"source_updated_at"`
	Phones          []struct {
		E164      string `json:"e164"`
		RawNumber string `json:"raw_number"`
		Label     string `json:"label"`
		IsPrimary bool   `json:"is_primary"`
	} `json:"phones"`
	Links []struct {
		Kind   string `json:"kind"`
		URL    string `json:"url"`
		Source string `json:"source"`
	} `json:"links"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

var contactsEpoch = time.Date(2025, 3, 10, 9, 0, 0, 0, time.UTC)

// newContactsHarness has a fake clock (to order contacts by change) and a rate limit
// high enough for the many requests of these tests.
func newContactsHarness(t *testing.T) (*harness, *clocktesting.FakeClock) {
	t.Helper()
	fc := clocktesting.NewFakeClock(contactsEpoch)
	h := newHarness(t, func(c *apiserver.Config) {
		c.Clock = fc
		c.RequestsPerMinute = 100000
	})
	return h, fc
}

func createContact(t *testing.T, h *harness, key string, body map[string]any) contactJSON {
	t.Helper()
	resp := h.api.Do(t, key, "POST", "/v1/contacts", body)
	if resp.Status != 201 {
		t.Fatalf("POST /contacts %v: %s", body, resp)
	}
	var c contactJSON
	resp.JSON(t, &c)
	return c
}

func listContacts(t *testing.T, h *harness, key, query string) page[contactJSON] {
	t.Helper()
	resp := h.api.Do(t, key, "GET", "/v1/contacts"+query, nil)
	if resp.Status != 200 {
		t.Fatalf("GET /contacts%s: %s", query, resp)
	}
	var p page[contactJSON]
	resp.JSON(t, &p)
	return p
}

func publicIDs(cs []contactJSON) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.PublicID
	}
	return out
}

func phones(numbers ...string) []map[string]any {
	out := make([]map[string]any, len(numbers))
	for i, n := range numbers {
		out[i] = map[string]any{"number": n}
	}
	return out
}

func countContacts(t *testing.T, h *harness, accountID int64) int {
	t.Helper()
	var n int
	if err := storetest.SQL(t, h.store).QueryRow(context.Background(), `SELECT count(*) FROM contacts WHERE account_id = $1`, accountID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestContactsCreateShowsEveryField(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)

	c := createContact(t, h, tenant.OwnerKey, map[string]any{
		"source": "hubspot", "external_id": "hs-1", "display_name": "  Ada Lovelace  ", "first_name": "Ada",
		"last_name": "Lovelace", "company": "Analytical Engines Ltd", "email": "ada@example.com", "notes": "Prefers mornings",
		"external_url": "https://crm.example.com/contacts/1", "source_created_at": "2024-01-02T03:04:05+01:00",
		"source_updated_at": "2024-02-03T04:05:06Z",
		"phones": []map[string]any{
			{"number": "020 7946 0000", "label": "Office", "is_primary": true},
			{"number": "not a number", "label": "Junk"},
			{"number": "+1 (415) 555-0100", "label": "US"},
		},
	})
	if c.PublicID == "" || c.DisplayName != "Ada Lovelace" || *c.FirstName != "Ada" || *c.LastName != "Lovelace" ||
		*c.Company != "Analytical Engines Ltd" || *c.Email != "ada@example.com" || *c.Notes != "Prefers mornings" ||
		c.Source != "hubspot" || *c.ExternalID != "hs-1" {
		t.Errorf("contact = %+v", c)
	}
	if *c.SourceCreatedAt != "2024-01-02T02:04:05Z" || *c.SourceUpdatedAt != "2024-02-03T04:05:06Z" {
		t.Errorf("source dates = %s, %s", *c.SourceCreatedAt, *c.SourceUpdatedAt)
	}
	if c.CreatedAt != "2025-03-10T09:00:00Z" || c.UpdatedAt != "2025-03-10T09:00:00Z" {
		t.Errorf("created_at, updated_at = %s, %s; want the clock's time", c.CreatedAt, c.UpdatedAt)
	}
	// The unreadable number is dropped; the others keep their order.
	if len(c.Phones) != 2 {
		t.Fatalf("phones = %+v, want 2", c.Phones)
	}
	if p := c.Phones[0]; p.E164 != "+442079460000" || p.RawNumber != "020 7946 0000" || p.Label != "Office" || !p.IsPrimary {
		t.Errorf("phones[0] = %+v", p)
	}
	if p := c.Phones[1]; p.E164 != "+14155550100" || p.Label != "US" || p.IsPrimary {
		t.Errorf("phones[1] = %+v", p)
	}
	if len(c.Links) != 1 || c.Links[0].Kind != "external" || c.Links[0].URL != "https://crm.example.com/contacts/1" || c.Links[0].Source != "hubspot" {
		t.Errorf("links = %+v", c.Links)
	}

	// The minimum: source defaults to "api", optional fields are null, no links.
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts", map[string]any{"display_name": "Bob", "phones": []any{}, "company": ""})
	if resp.Status != 201 {
		t.Fatalf("minimal contact: %s", resp)
	}
	m := resp.Map(t)
	for _, f := range []string{"first_name", "last_name", "company", "email", "notes", "external_id", "source_created_at", "source_updated_at"} {
		if v, ok := m[f]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", f, v, ok)
		}
	}
	if m["source"] != "api" {
		t.Errorf("source = %v, want api", m["source"])
	}
	if ps, ok := m["phones"].([]any); !ok || len(ps) != 0 {
		t.Errorf("phones = %v, want []", m["phones"])
	}
	if ls, ok := m["links"].([]any); !ok || len(ls) != 0 {
		t.Errorf("links = %v, want []", m["links"])
	}
}

func TestContactsUpsertByExternalID(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)

	first := createContact(t, h, tenant.OwnerKey, map[string]any{"source": "crm", "external_id": "42", "display_name": "Old Name",
		"company": "Old Co", "phones": phones("020 7946 0001", "020 7946 0002")})
	fc.Step(time.Hour)
	second := createContact(t, h, tenant.OwnerKey, map[string]any{"source": "crm", "external_id": "42", "display_name": "New Name",
		"phones": phones("07700 900123")})
	if second.PublicID != first.PublicID {
		t.Fatalf("upsert made a new contact %s, want %s", second.PublicID, first.PublicID)
	}
	if second.DisplayName != "New Name" || second.Company != nil {
		t.Errorf("upserted contact = %+v, want every detail replaced", second)
	}
	if len(second.Phones) != 1 || second.Phones[0].E164 != "+447700900123" {
		t.Errorf("phones = %+v, want only the new number", second.Phones)
	}
	if second.CreatedAt != first.CreatedAt || second.UpdatedAt != "2025-03-10T10:00:00Z" {
		t.Errorf("created_at %s -> %s, updated_at = %s", first.CreatedAt, second.CreatedAt, second.UpdatedAt)
	}
	// Same external id under another source is another contact; no external id always adds one.
	other := createContact(t, h, tenant.OwnerKey, map[string]any{"source": "billing", "external_id": "42", "display_name": "X", "phones": []any{}})
	a := createContact(t, h, tenant.OwnerKey, map[string]any{"display_name": "Twin", "phones": []any{}})
	b := createContact(t, h, tenant.OwnerKey, map[string]any{"display_name": "Twin", "phones": []any{}})
	if other.PublicID == first.PublicID || a.PublicID == b.PublicID {
		t.Errorf("distinct contacts share ids: %s %s %s %s", first.PublicID, other.PublicID, a.PublicID, b.PublicID)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 4 {
		t.Errorf("%d contacts, want 4", n)
	}
	var phoneRows int
	if err := storetest.SQL(t, h.store).QueryRow(context.Background(), `SELECT count(*) FROM contact_phones WHERE account_id = $1`, tenant.Account.ID).Scan(&phoneRows); err != nil {
		t.Fatal(err)
	}
	if phoneRows != 1 {
		t.Errorf("%d phone rows, want 1 (old ones replaced)", phoneRows)
	}
}

func TestContactsConcurrentCreatesWithSameExternalID(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Go(func() {
			resp := h.api.DoUnchecked(t, tenant.OwnerKey, "POST", "/v1/contacts", map[string]any{
				"source": "crm", "external_id": "same", "display_name": fmt.Sprint("Call ", i), "phones": phones("020 7946 0000")})
			statuses[i] = resp.Status
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 201 {
			t.Errorf("request %d: %d", i, s)
		}
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 1 {
		t.Errorf("%d contacts, want 1", n)
	}
}

func TestContactsListSearchFilterOrderAndPaging(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	key := tenant.OwnerKey

	ada := createContact(t, h, key, map[string]any{"source": "crm", "external_id": "1", "display_name": "Ada Lovelace",
		"company": "Engines Ltd", "email": "ada@lovelace.example", "phones": phones("020 7946 0000")})
	fc.Step(time.Minute)
	bob := createContact(t, h, key, map[string]any{"source": "crm", "display_name": "Bob Builder",
		"company": "Fix_It 100% Ltd", "email": "bob@builds.example", "phones": phones("+44 7700 900123")})
	fc.Step(time.Minute)
	cy := createContact(t, h, key, map[string]any{"source": "shop", "display_name": "Cy Twombly",
		"email": "CY@ART.EXAMPLE", "phones": phones("+1 415 555 0100")})
	fc.Step(time.Minute)
	createContact(t, h, other.OwnerKey, map[string]any{"display_name": "Ada Elsewhere", "phones": phones("020 7946 0000")})

	// Most recently changed first; changing Ada moves her to the top.
	if got := publicIDs(listContacts(t, h, key, "").Data); strings.Join(got, ",") != strings.Join([]string{cy.PublicID, bob.PublicID, ada.PublicID}, ",") {
		t.Errorf("order = %v", got)
	}
	fc.Step(time.Minute)
	if resp := h.api.Do(t, key, "PUT", "/v1/contacts/"+ada.PublicID, map[string]any{"display_name": "Ada Lovelace",
		"company": "Engines Ltd", "email": "ada@lovelace.example", "phones": phones("020 7946 0000")}); resp.Status != 200 {
		t.Fatalf("PUT: %s", resp)
	}
	if got := publicIDs(listContacts(t, h, key, "").Data); strings.Join(got, ",") != strings.Join([]string{ada.PublicID, cy.PublicID, bob.PublicID}, ",") {
		t.Errorf("order after changing Ada = %v", got)
	}

	searches := []struct {
		query string
		want  []string
	}{
		{"lovelace", []string{ada.PublicID}},          // name (and email)
		{"ENGINES", []string{ada.PublicID}},           // company, any case
		{"art.example", []string{cy.PublicID}},        // email
		{"100%", []string{bob.PublicID}},              // LIKE wildcards are literal
		{"fix_it", []string{bob.PublicID}},            // ...including _
		{"_", []string{bob.PublicID}},                 //
		{"+44 20 7946", []string{ada.PublicID}},       // phone, international digits
		{"447700", []string{bob.PublicID}},            // digits without +
		{"+44", []string{ada.PublicID, bob.PublicID}}, // every UK number
		{"07700 900123", nil},                         // national form is not rewritten
		{"4155550100", []string{cy.PublicID}},         //
		{"Elsewhere", nil},                            // another account's contact
		{"nobody", nil},                               //
		{"  ada  ", []string{ada.PublicID}},           // trimmed
		{"builder 4", nil},                            // text with digits is a name search
		{"twombly", []string{cy.PublicID}},            //
		{"lovelace engines", nil},                     // text spanning name and company is in neither
		{"ltd bob@", nil},                             // ...nor spanning company and email
	}
	for _, s := range searches {
		got := publicIDs(listContacts(t, h, key, "?search="+url.QueryEscape(s.query)).Data)
		if strings.Join(got, ",") != strings.Join(s.want, ",") {
			t.Errorf("search %q = %v, want %v", s.query, got, s.want)
		}
	}

	if got := publicIDs(listContacts(t, h, key, "?source=crm").Data); strings.Join(got, ",") != strings.Join([]string{ada.PublicID, bob.PublicID}, ",") {
		t.Errorf("source=crm = %v", got)
	}
	if got := listContacts(t, h, key, "?source=nothing"); len(got.Data) != 0 || got.Total != 0 {
		t.Errorf("source=nothing = %+v", got)
	}
	if got := publicIDs(listContacts(t, h, key, "?source=crm&search=bob").Data); len(got) != 1 || got[0] != bob.PublicID {
		t.Errorf("source and search = %v", got)
	}

	// Paging envelope.
	p1 := listContacts(t, h, key, "?per_page=2")
	if p1.Total != 3 || p1.LastPage != 2 || p1.PerPage != 2 || p1.CurrentPage != 1 || len(p1.Data) != 2 || p1.NextPageURL == nil || p1.PrevPageURL != nil {
		t.Fatalf("page 1 = %+v", p1)
	}
	if !strings.Contains(*p1.NextPageURL, "page=2") || !strings.Contains(*p1.NextPageURL, "per_page=2") {
		t.Errorf("next_page_url = %s", *p1.NextPageURL)
	}
	p2 := listContacts(t, h, key, "?per_page=2&page=2")
	if len(p2.Data) != 1 || p2.Data[0].PublicID != bob.PublicID || p2.NextPageURL != nil || p2.PrevPageURL == nil {
		t.Errorf("page 2 = %+v", p2)
	}
	if p9 := listContacts(t, h, key, "?page=9"); len(p9.Data) != 0 || p9.Total != 3 {
		t.Errorf("page past the end = %+v", p9)
	}
	if d := listContacts(t, h, key, ""); d.PerPage != 25 {
		t.Errorf("default per_page = %d", d.PerPage)
	}

	for _, q := range []string{"?per_page=101", "?per_page=0", "?page=0", "?page=x", "?search=" + strings.Repeat("a", 101)} {
		resp := h.api.Do(t, key, "GET", "/v1/contacts"+q, nil)
		if resp.Status != 422 {
			t.Errorf("GET /contacts%s: %s, want 422", q, resp)
		}
	}
}

func TestContactsPutReplacesButKeepsSourceAndExternalID(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	c := createContact(t, h, tenant.OwnerKey, map[string]any{"source": "crm", "external_id": "7", "display_name": "Jo",
		"company": "Acme", "external_url": "https://crm.example/7", "phones": phones("020 7946 0001", "020 7946 0002")})
	fc.Step(time.Hour)

	resp := h.api.Do(t, tenant.OwnerKey, "PUT", "/v1/contacts/"+c.PublicID, map[string]any{"source": "other", "external_id": "8",
		"display_name": "Joanna", "email": "jo@example.com", "phones": []map[string]any{{"number": "07700 900123", "label": "Mobile", "is_primary": true}}})
	if resp.Status != 200 {
		t.Fatalf("PUT: %s", resp)
	}
	var got contactJSON
	resp.JSON(t, &got)
	if got.PublicID != c.PublicID || got.Source != "crm" || got.ExternalID == nil || *got.ExternalID != "7" {
		t.Errorf("PUT changed identity: %+v", got)
	}
	if got.DisplayName != "Joanna" || got.Company != nil || got.Email == nil || *got.Email != "jo@example.com" || len(got.Links) != 0 {
		t.Errorf("PUT did not replace details: %+v", got)
	}
	if len(got.Phones) != 1 || got.Phones[0].E164 != "+447700900123" || got.Phones[0].Label != "Mobile" || !got.Phones[0].IsPrimary {
		t.Errorf("phones = %+v", got.Phones)
	}
	if got.UpdatedAt != "2025-03-10T10:00:00Z" || got.CreatedAt != c.CreatedAt {
		t.Errorf("created_at %s, updated_at %s", got.CreatedAt, got.UpdatedAt)
	}
	// Upserting the original source and external id still finds it.
	again := createContact(t, h, tenant.OwnerKey, map[string]any{"source": "crm", "external_id": "7", "display_name": "Jo", "phones": []any{}})
	if again.PublicID != c.PublicID {
		t.Errorf("upsert after PUT made %s, want %s", again.PublicID, c.PublicID)
	}

	body := map[string]any{"display_name": "X", "phones": []any{}}
	for _, path := range []string{"/v1/contacts/ct_unknown", "/v1/contacts/" + c.PublicID} {
		key := tenant.OwnerKey
		if strings.HasSuffix(path, c.PublicID) {
			key = other.OwnerKey
		}
		if resp := h.api.Do(t, key, "PUT", path, body); resp.Status != 404 {
			t.Errorf("PUT %s: %s, want 404", path, resp)
		}
	}
	if resp := h.api.Do(t, tenant.OwnerKey, "PUT", "/v1/contacts/"+c.PublicID, map[string]any{"display_name": ""}); resp.Status != 422 {
		t.Errorf("PUT with invalid body: %s", resp)
	}
}

func TestContactsDelete(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	c := createContact(t, h, tenant.OwnerKey, map[string]any{"display_name": "Gone Soon", "phones": phones("020 7946 0000")})

	if resp := h.api.Do(t, other.OwnerKey, "DELETE", "/v1/contacts/"+c.PublicID, nil); resp.Status != 404 {
		t.Errorf("DELETE another account's contact: %s", resp)
	}
	resp := h.api.Do(t, tenant.OwnerKey, "DELETE", "/v1/contacts/"+c.PublicID, nil)
	if resp.Status != 200 || resp.Map(t)["deleted"] != true {
		t.Fatalf("DELETE: %s", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 0 {
		t.Errorf("%d contacts left", n)
	}
	var phones int
	if err := storetest.SQL(t, h.store).QueryRow(context.Background(), `SELECT count(*) FROM contact_phones WHERE account_id = $1`,
		tenant.Account.ID).Scan(&phones); err != nil || phones != 0 {
		t.Errorf("a deleted contact left %d phones (%v): they would still name callers", phones, err)
	}
	if resp := h.api.Do(t, tenant.OwnerKey, "DELETE", "/v1/contacts/"+c.PublicID, nil); resp.Status != 404 {
		t.Errorf("second DELETE: %s", resp)
	}
}

func TestContactsWriteValidation(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	long := func(n int) string { return strings.Repeat("x", n) }
	ok := func() map[string]any { return map[string]any{"display_name": "Valid", "phones": []any{}} }
	with := func(k string, v any) map[string]any { m := ok(); m[k] = v; return m }
	without := func(k string) map[string]any { m := ok(); delete(m, k); return m }

	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"display_name missing", without("display_name"), "display_name"},
		{"display_name null", with("display_name", nil), "display_name"},
		{"display_name blank", with("display_name", "   "), "display_name"},
		{"display_name too long", with("display_name", long(201)), "display_name"},
		{"display_name a number", with("display_name", 5), "display_name"},
		{"phones missing", without("phones"), "phones"},
		{"phones null", with("phones", nil), "phones"},
		{"phones an object", with("phones", map[string]any{}), "phones"},
		{"too many phones", with("phones", phones(strings.Split(strings.Repeat("020 7946 0000,", 21), ",")[:21]...)), "phones"},
		{"phone not an object", with("phones", []any{"020 7946 0000"}), "phones.0"},
		{"phone number missing", with("phones", []any{map[string]any{"label": "x"}}), "phones.0.number"},
		{"phone number a number", with("phones", []any{map[string]any{"number": 2079460000}}), "phones.0.number"},
		{"phone label too long", with("phones", []any{map[string]any{"number": "1"}, map[string]any{"number": "020 7946 0000", "label": long(51)}}), "phones.1.label"},
		{"is_primary a string", with("phones", []any{map[string]any{"number": "020 7946 0000", "is_primary": "yes"}}), "phones.0.is_primary"},
		{"email", with("email", "not-an-email"), "email"},
		{"email without domain dot", with("email", "a@b"), "email"},
		{"email too long", with("email", long(310)+"@example.com"), "email"},
		{"first_name too long", with("first_name", long(201)), "first_name"},
		{"last_name too long", with("last_name", long(201)), "last_name"},
		{"company too long", with("company", long(201)), "company"},
		{"notes too long", with("notes", long(2001)), "notes"},
		{"external_url not a url", with("external_url", "crm/7"), "external_url"},
		{"external_url not http", with("external_url", "javascript:alert(1)"), "external_url"},
		{"external_url too long", with("external_url", "https://x.example/"+long(2048)), "external_url"},
		{"external_id too long", with("external_id", long(256)), "external_id"},
		{"external_id a number", with("external_id", 42), "external_id"},
		{"source too long", with("source", long(101)), "source"},
		{"source_created_at not a date", with("source_created_at", "yesterday"), "source_created_at"},
		{"source_updated_at without offset", with("source_updated_at", "2024-01-02T03:04:05"), "source_updated_at"},
		// Past year 9999 or before year 1 in UTC, a date-time cannot be shown as ISO 8601 text.
		{"source_created_at after 9999 in UTC", with("source_created_at", "9999-12-31T23:59:59-01:00"), "source_created_at"},
		{"source_updated_at before year 1 in UTC", with("source_updated_at", "0001-01-01T00:30:00+01:00"), "source_updated_at"},
		{"NUL in notes", with("notes", "a\x00b"), "notes"},
		{"body an array", []any{}, "body"},
		{"body null", "null", "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts", tc.body)
			if resp.Status != 422 {
				t.Fatalf("got %s, want 422", resp)
			}
			var body struct {
				Message string
				Errors  map[string][]string
			}
			resp.JSON(t, &body)
			if len(body.Errors[tc.field]) == 0 || body.Message == "" {
				t.Errorf("errors = %v, want one on %s", body.Errors, tc.field)
			}
		})
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 0 {
		t.Errorf("invalid payloads saved %d contacts", n)
	}
	for _, raw := range []string{"{", `{"display_name": "x"`, ""} {
		if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts", raw); resp.Status != 400 {
			t.Errorf("body %q: %s, want 400", raw, resp)
		}
	}
	// Accepted edge values.
	for _, body := range []map[string]any{
		with("display_name", long(200)), with("email", "o'brien+tag@sub.example.co.uk"), with("source_created_at", "2024-01-02T03:04:05.123+05:30"),
		with("external_url", "http://crm.example:8080/c?id=1"), with("notes", nil), with("phones", []any{map[string]any{"number": ""}}),
		with("source_created_at", "0001-01-01T00:00:00Z"), with("source_updated_at", "9999-12-31T23:59:59Z"),
	} {
		if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts", body); resp.Status != 201 {
			t.Errorf("POST %v: %s, want 201", body, resp)
		}
	}
	// Whatever was accepted, the directory can still be listed.
	if p := listContacts(t, h, tenant.OwnerKey, ""); p.Total != 8 || len(p.Data) != 8 {
		t.Errorf("list after the accepted edge values: total %d, %d rows", p.Total, len(p.Data))
	}

	// A phone "number" that cannot be read as one is dropped, however long or odd the text
	// (spec, POST /contacts), in a single write and in a bulk upsert alike.
	junk := []any{map[string]any{"number": "Ring reception and ask for Sam; " + long(120)}, map[string]any{"number": "0800\x00123"},
		map[string]any{"number": "020 7946 0000", "label": "Office"}}
	c := createContact(t, h, tenant.OwnerKey, with("phones", junk))
	if len(c.Phones) != 1 || c.Phones[0].E164 != "+442079460000" {
		t.Errorf("phones = %+v, want only the readable number", c.Phones)
	}
	item := with("phones", junk)
	item["external_id"] = "junk-1"
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": []any{item}})
	if resp.Status != 202 || resp.Map(t)["imported_count"] != float64(1) {
		t.Errorf("bulk upsert with unreadable numbers: %s, want 202 with 1 imported", resp)
	}
}

func bulkContacts(n int, prefix string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"external_id": fmt.Sprintf("%s-%03d", prefix, i), "display_name": fmt.Sprintf("Person %d", i),
			"email": fmt.Sprintf("p%d@example.com", i), "external_url": fmt.Sprintf("https://crm.example/%d", i),
			"phones": []map[string]any{
				{"number": fmt.Sprintf("020 7946 %04d", i), "label": "Office", "is_primary": true},
				{"number": fmt.Sprintf("07700 9%05d", i), "label": "Mobile"},
			}}
	}
	return out
}

func TestContactsBulkUpsert(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	key := tenant.OwnerKey
	existing := createContact(t, h, key, map[string]any{"source": "crm", "external_id": "crm-001", "display_name": "Before",
		"phones": phones("01632 960000")})
	fc.Step(time.Hour)

	contacts := bulkContacts(3, "crm")
	contacts = append(contacts,
		map[string]any{"display_name": "No external id", "phones": phones("020 7946 9999")},
		map[string]any{"source": "shop", "external_id": "crm-001", "display_name": "Other source", "phones": []any{}},
		map[string]any{"external_id": "crm-002", "display_name": "Person 2 again", "phones": phones("020 7946 8888")},
	)
	resp := h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": contacts})
	if resp.Status != 202 {
		t.Fatalf("bulk upsert: %s", resp)
	}
	var res struct {
		Imported int `json:"imported_count"`
		Failed   int `json:"failed_count"`
	}
	resp.JSON(t, &res)
	if res.Imported != 6 || res.Failed != 0 {
		t.Errorf("result = %+v, want 6 imported", res)
	}
	// crm-000, crm-001 (existing, updated), crm-002 (last one wins), the new one, shop/crm-001, the earlier contact: 5.
	if n := countContacts(t, h, tenant.Account.ID); n != 5 {
		t.Errorf("%d contacts, want 5", n)
	}
	all := listContacts(t, h, key, "")
	byExt := map[string]contactJSON{}
	for _, c := range all.Data {
		if c.ExternalID != nil {
			byExt[c.Source+"/"+*c.ExternalID] = c
		} else if c.DisplayName != "No external id" || c.Source != "crm" {
			t.Errorf("contact without external id = %+v", c)
		}
	}
	upd := byExt["crm/crm-001"]
	if upd.PublicID != existing.PublicID || upd.DisplayName != "Person 1" || upd.CreatedAt != existing.CreatedAt || upd.UpdatedAt != "2025-03-10T10:00:00Z" {
		t.Errorf("updated contact = %+v", upd)
	}
	if len(upd.Phones) != 2 || upd.Phones[0].E164 != "+442079460001" || !upd.Phones[0].IsPrimary || upd.Phones[1].E164 != "+447700900001" || upd.Phones[1].Label != "Mobile" {
		t.Errorf("updated contact's phones = %+v", upd.Phones)
	}
	if len(upd.Links) != 1 || upd.Links[0].URL != "https://crm.example/1" || upd.Links[0].Source != "crm" {
		t.Errorf("links = %+v", upd.Links)
	}
	if c := byExt["crm/crm-002"]; c.DisplayName != "Person 2 again" || len(c.Phones) != 1 || c.Phones[0].E164 != "+442079468888" {
		t.Errorf("repeated external id: %+v", c)
	}
	if c := byExt["shop/crm-001"]; c.DisplayName != "Other source" {
		t.Errorf("item with its own source: %+v", c)
	}

	// Running the same batch again changes nothing in number.
	resp = h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": contacts[:3]})
	if resp.Status != 202 {
		t.Fatalf("second bulk upsert: %s", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 5 {
		t.Errorf("%d contacts after a repeat, want 5", n)
	}
	// An empty batch is fine.
	resp = h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": []any{}})
	if resp.Status != 202 || resp.Map(t)["imported_count"] != float64(0) {
		t.Errorf("empty batch: %s", resp)
	}
}

func TestContactsBulkUpsertValidation(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	key := tenant.OwnerKey

	bad := bulkContacts(5, "v")
	bad[3]["display_name"] = ""
	bad[4]["phones"] = []any{map[string]any{"number": "020 7946 0000", "label": strings.Repeat("l", 51)}}
	bad[1]["source_updated_at"] = 12
	cases := []struct {
		name   string
		body   any
		fields []string
	}{
		{"invalid items", map[string]any{"source": "crm", "contacts": bad}, []string{"contacts.3.display_name", "contacts.4.phones.0.label", "contacts.1.source_updated_at"}},
		{"501 contacts", map[string]any{"source": "crm", "contacts": bulkContacts(501, "x")}, []string{"contacts"}},
		{"source missing", map[string]any{"contacts": bulkContacts(1, "x")}, []string{"source"}},
		{"source blank", map[string]any{"source": " ", "contacts": bulkContacts(1, "x")}, []string{"source"}},
		{"source a number", map[string]any{"source": 1, "contacts": bulkContacts(1, "x")}, []string{"source"}},
		{"contacts missing", map[string]any{"source": "crm"}, []string{"contacts"}},
		{"contacts an object", map[string]any{"source": "crm", "contacts": map[string]any{}}, []string{"contacts"}},
		{"item not an object", map[string]any{"source": "crm", "contacts": []any{bulkContacts(1, "x")[0], "x"}}, []string{"contacts.1"}},
		{"body an array", []any{}, []string{"body"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", tc.body)
			if resp.Status != 422 {
				t.Fatalf("got %s, want 422", resp)
			}
			var body struct{ Errors map[string][]string }
			resp.JSON(t, &body)
			for _, f := range tc.fields {
				if len(body.Errors[f]) == 0 {
					t.Errorf("errors = %v, want one on %s", body.Errors, f)
				}
			}
		})
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 0 {
		t.Errorf("a rejected batch saved %d contacts", n)
	}
	if resp := h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", `{"source": "crm", "contacts": [`); resp.Status != 400 {
		t.Errorf("malformed JSON: %s", resp)
	}
	// Exactly 500 is allowed.
	if resp := h.api.Do(t, key, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": bulkContacts(500, "x")}); resp.Status != 202 {
		t.Errorf("500 contacts: %s", resp)
	}
}

// fullContact is a contact write payload with every field at its documented limit
// (docs/api-decisions.md: names 200, email 320, notes 2000, URLs 2048, external_id 255, source 100, 20 phones
// with 50-character labels), numbers as long as a number field is read.
func fullContact(i int) map[string]any {
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	ps := make([]map[string]any, 20)
	for j := range ps {
		ps[j] = map[string]any{"number": fmt.Sprintf("020 7946 %04d", (i*20+j)%10000) + strings.Repeat(" ", 87),
			"label": pad("Label ", 50), "is_primary": j == 0}
	}
	return map[string]any{"source": pad("src", 100), "external_id": fmt.Sprintf("%0255d", i),
		"display_name": pad(fmt.Sprint("Name ", i, " "), 200), "first_name": pad("F", 200), "last_name": pad("L", 200),
		"company": pad("C", 200), "email": pad("", 308) + "@example.com", "notes": pad("N", 2000),
		"external_url": pad("https://crm.example/", 2048), "source_created_at": "2024-01-02T03:04:05.123456789+05:30",
		"source_updated_at": "2024-01-02T03:04:05.123456789+05:30", "phones": ps}
}

// The spec allows 500 contacts a batch and docs/api-decisions.md gives each field's limit: a batch within
// both is accepted, however large its body (here about 5 MB).
func TestContactsBulkUpsertOfFullContacts(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	contacts := make([]map[string]any, 500)
	for i := range contacts {
		contacts[i] = fullContact(i)
	}
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": contacts})
	if resp.Status != 202 || resp.Map(t)["imported_count"] != float64(500) || resp.Map(t)["failed_count"] != float64(0) {
		t.Fatalf("500 full contacts: %.300s, want 202 with 500 imported", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 500 {
		t.Errorf("%d contacts, want 500", n)
	}
}

func TestContactsConcurrentBulkUpsertsMakeNoDuplicates(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	first := bulkContacts(500, "same")
	// The second batch holds the same external ids in another order, with other details.
	second := bulkContacts(500, "same")
	for i, j := 0, len(second)-1; i < j; i, j = i+1, j-1 {
		second[i], second[j] = second[j], second[i]
	}
	for round := range 3 {
		var wg sync.WaitGroup
		results := make([]*apitest.Response, 4)
		for i := range results {
			batch := first
			if i%2 == 1 {
				batch = second
			}
			wg.Go(func() {
				resp := h.api.DoUnchecked(t, tenant.OwnerKey, "POST", "/v1/contacts/bulk-upsert", map[string]any{"source": "crm", "contacts": batch})
				results[i] = resp
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.Status != 202 || r.Map(t)["imported_count"] != float64(500) || r.Map(t)["failed_count"] != float64(0) {
				t.Errorf("round %d request %d: %s", round, i, r)
			}
		}
		if n := countContacts(t, h, tenant.Account.ID); n != 500 {
			t.Fatalf("round %d: %d contacts, want exactly 500", round, n)
		}
	}
	var phoneRows int
	if err := storetest.SQL(t, h.store).QueryRow(context.Background(), `SELECT count(*) FROM contact_phones WHERE account_id = $1 AND e164 <> ''`, tenant.Account.ID).Scan(&phoneRows); err != nil {
		t.Fatal(err)
	}
	if phoneRows != 1000 {
		t.Errorf("%d phone rows, want 1000", phoneRows)
	}
}

func TestContactsAccess(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	c := createContact(t, h, tenant.OwnerKey, map[string]any{"display_name": "Someone", "phones": []any{}})
	body := map[string]any{"display_name": "X", "phones": []any{}}
	bulk := map[string]any{"source": "crm", "contacts": []any{body}}
	writes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/contacts", body},
		{"POST", "/v1/contacts/bulk-upsert", bulk},
		{"PUT", "/v1/contacts/" + c.PublicID, body},
		{"DELETE", "/v1/contacts/" + c.PublicID, nil},
	}

	// Refusals for a missing permission are {message} bodies, which the shared 403 description
	// of add-on routes (access.go: AddonRefusalBody only) does not allow yet; they are checked
	// without the description until it does.
	readKey := apitest.NewKey(t, h.store, tenant.Owner.ID, "contacts:read")
	if resp := h.api.Do(t, readKey, "GET", "/v1/contacts", nil); resp.Status != 200 {
		t.Errorf("contacts:read key listing: %s", resp)
	}
	for _, w := range writes {
		if resp := h.api.DoUnchecked(t, readKey, w.method, w.path, w.body); resp.Status != 403 || !strings.Contains(resp.Map(t)["message"].(string), "contacts:write") {
			t.Errorf("contacts:read key %s %s: %s, want 403", w.method, w.path, resp)
		}
	}
	plainKey := apitest.NewKey(t, h.store, tenant.Owner.ID, "read", "inbox:write")
	if resp := h.api.DoUnchecked(t, plainKey, "GET", "/v1/contacts", nil); resp.Status != 403 || !strings.Contains(resp.Map(t)["message"].(string), "contacts:read") {
		t.Errorf("read-only key listing contacts: %s, want 403", resp)
	}
	writeKey := apitest.NewKey(t, h.store, tenant.Owner.ID, "contacts:write")
	if resp := h.api.Do(t, writeKey, "GET", "/v1/contacts", nil); resp.Status != 200 {
		t.Errorf("contacts:write key listing (includes contacts:read): %s", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 1 {
		t.Errorf("refused writes changed the directory: %d contacts", n)
	}

	// Integrations add-on gate.
	team := apitest.NewTenant(t, h.store, plans.Team)
	for _, w := range append(writes, struct {
		method, path string
		body         any
	}{"GET", "/v1/contacts", nil}) {
		resp := h.api.Do(t, team.OwnerKey, w.method, w.path, w.body)
		if resp.Status != 403 || resp.Map(t)["reason"] != "addon_required" || resp.Map(t)["capability"] != "integrations" {
			t.Errorf("team plan without add-on %s %s: %s, want 403 addon_required", w.method, w.path, resp)
		}
	}
	teamWithAddon := apitest.NewTenant(t, h.store, plans.Team, plans.AddonIntegrations)
	if resp := h.api.Do(t, teamWithAddon.OwnerKey, "POST", "/v1/contacts", body); resp.Status != 201 {
		t.Errorf("team plan with add-on: %s", resp)
	}
}
