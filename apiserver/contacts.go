package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Limits of the contact write payload. The spec leaves field lengths open; these are
// generous for any address book (docs/api-decisions.md lists them).
const (
	contactsMaxPerPage     = 100
	contactsDefaultPerPage = 25
	maxBulkContacts        = 500
	maxContactPhones       = 20
	maxSourceLen           = 100
	maxExternalIDLen       = 255
	maxNameLen             = 200
	maxEmailLen            = 320
	maxNotesLen            = 2000
	maxURLLen              = 2048
	maxPhoneNumberLen      = 100
	maxPhoneLabelLen       = 50
	defaultContactSource   = "api"

	// maxBulkBodyBytes bounds a bulk upsert's body. 500 contacts with every field at its limit
	// take about 5 MB as ASCII and about 18 MB if every character needs 4 bytes of UTF-8, so
	// any batch within the documented limits fits (the usual 4 MiB did not).
	maxBulkBodyBytes = 24 << 20
)

// ContactWrite is the contact write payload of POST /contacts, PUT /contacts/{contact}
// and each item of a bulk upsert. Empty strings count as null.
type ContactWrite struct {
	Source          *string             `json:"source" maxLength:"100" description:"The writing system's name; default \"api\" (in a bulk upsert, the batch's source)."`
	ExternalID      *string             `json:"external_id" maxLength:"255" description:"The contact's id in the writing system; a contact with the same source and external_id is updated instead of duplicated."`
	DisplayName     string              `json:"display_name" required:"true" minLength:"1" maxLength:"200"`
	FirstName       *string             `json:"first_name" maxLength:"200"`
	LastName        *string             `json:"last_name" maxLength:"200"`
	Company         *string             `json:"company" maxLength:"200"`
	Email           *string             `json:"email" maxLength:"320"`
	Notes           *string             `json:"notes" maxLength:"2000"`
	ExternalURL     *string             `json:"external_url" maxLength:"2048" format:"uri" description:"Link to the contact in the writing system (http or https); shown as a links item of kind external."`
	SourceCreatedAt *time.Time          `json:"source_created_at"`
	SourceUpdatedAt *time.Time          `json:"source_updated_at"`
	Phones          []ContactPhoneWrite `json:"phones" required:"true" nullable:"false" maxItems:"20" description:"Replaces the contact's phones. Numbers that cannot be read as phone numbers are dropped; national numbers are read as UK numbers."`
}

// ContactPhoneWrite is a phone number of the write payload.
type ContactPhoneWrite struct {
	Number    string `json:"number" required:"true" description:"The number as the writing system holds it; text that cannot be read as a phone number (over 100 characters never can) is dropped."`
	Label     string `json:"label" maxLength:"50"`
	IsPrimary bool   `json:"is_primary"`
}

// BulkUpsertContactsRequest is the body of POST /contacts/bulk-upsert.
type BulkUpsertContactsRequest struct {
	Source   string         `json:"source" required:"true" minLength:"1" maxLength:"100" description:"Used for every contact that gives no source of its own."`
	Contacts []ContactWrite `json:"contacts" required:"true" nullable:"false" maxItems:"500"`
}

// BulkUpsertContactsResult is the 202 answer of a bulk upsert.
type BulkUpsertContactsResult struct {
	ImportedCount int `json:"imported_count" required:"true"`
	FailedCount   int `json:"failed_count" required:"true"`
}

// ContactDeleted is the answer of DELETE /contacts/{contact}.
type ContactDeleted struct {
	Deleted bool `json:"deleted" required:"true"`
}

// ContactList is a page of contacts.
type ContactList Page[Contact]

// contactPayload decodes a ContactWrite keeping absent, null and wrongly typed values apart;
// phones are decoded one by one so errors can name their index.
type contactPayload struct {
	Source          *string            `json:"source"`
	ExternalID      *string            `json:"external_id"`
	DisplayName     *string            `json:"display_name"`
	FirstName       *string            `json:"first_name"`
	LastName        *string            `json:"last_name"`
	Company         *string            `json:"company"`
	Email           *string            `json:"email"`
	Notes           *string            `json:"notes"`
	ExternalURL     *string            `json:"external_url"`
	SourceCreatedAt *string            `json:"source_created_at"`
	SourceUpdatedAt *string            `json:"source_updated_at"`
	Phones          *[]json.RawMessage `json:"phones"`
}

type contactPhonePayload struct {
	Number    *string `json:"number"`
	Label     *string `json:"label"`
	IsPrimary *bool   `json:"is_primary"`
}

type bulkPayload struct {
	Source   *string            `json:"source"`
	Contacts *[]json.RawMessage `json:"contacts"`
}

type contactsResource struct{ *Server }

func (r contactsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/contacts").Produces(restful.MIME_JSON)
	contactParam := ws.PathParameter("contact", "The contact's public_id.").DataType("string")
	read := Access{Permission: auth.ContactsRead, NeedsIntegrations: true}
	write := Access{Permission: auth.ContactsWrite, NeedsIntegrations: true}
	withBodyErrors := func(rb *restful.RouteBuilder) *restful.RouteBuilder {
		return rb.Consumes(restful.MIME_JSON).
			Returns(http.StatusBadRequest, "The body is empty or not valid JSON.", ErrorBody{}).
			Returns(http.StatusRequestEntityTooLarge, "The body is too large.", ErrorBody{}).
			Returns(http.StatusUnsupportedMediaType, "The body is not sent as application/json.", ErrorBody{}).
			Returns(http.StatusUnprocessableEntity, "A field is missing or invalid.", ValidationErrorBody{})
	}

	list := ws.GET("").To(r.list).Operation("listContacts").
		Doc("The contact directory, most recently changed first.").
		Param(ws.QueryParameter("search", "Part of the display name, company or email (any case), or of a phone number as international digits (+44..., not 07...).").DataType("string")).
		Param(ws.QueryParameter("source", "Only contacts written by this source.").DataType("string"))
	for _, p := range pageParams(ws, contactsMaxPerPage, contactsDefaultPerPage) {
		list.Param(p)
	}
	ws.Route(protect(list.
		Returns(http.StatusOK, "OK", ContactList{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}), read))

	ws.Route(protect(withBodyErrors(r.idempotent(ws.POST(""), r.create).Operation("createContact").
		Doc("Adds a contact; with an external_id, the contact of the same source and external_id is updated instead (still 201).").
		Reads(ContactWrite{}).
		Returns(http.StatusCreated, "The contact as saved.", Contact{})), write))

	ws.Route(protect(withBodyErrors(r.idempotent(ws.POST("/bulk-upsert"), r.bulkUpsert).Operation("bulkUpsertContacts").
		Doc("Creates or updates up to 500 contacts, each matched on source and external_id. One invalid contact rejects the whole batch with 422.").
		Reads(BulkUpsertContactsRequest{}).
		Returns(http.StatusAccepted, "How many contacts were saved and how many failed.", BulkUpsertContactsResult{})), write))

	ws.Route(protect(withBodyErrors(ws.PUT("/{contact}").To(r.replace).Operation("replaceContact").Param(contactParam).
		Doc("Replaces a contact's details and phones; its source and external_id stay as they were.").
		Reads(ContactWrite{}).
		Returns(http.StatusOK, "The contact as saved.", Contact{}).
		Returns(http.StatusNotFound, "No such contact on this account.", ErrorBody{})), write))

	ws.Route(protect(ws.DELETE("/{contact}").To(r.delete).Operation("deleteContact").Param(contactParam).
		Doc("Removes a contact.").
		Returns(http.StatusOK, "Removed.", ContactDeleted{}).
		Returns(http.StatusNotFound, "No such contact on this account.", ErrorBody{}), write))
	c.Add(ws)
}

func (r contactsResource) list(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	paging := parsePaging(req, fe, contactsMaxPerPage, contactsDefaultPerPage)
	search := queryText(req, fe, "search")
	source := queryText(req, fe, "source")
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	f := store.ContactSearch(search)
	f.Source = source
	rows, total, err := r.store.ListContacts(req.Request.Context(), principal(req).Account.ID, f, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, ContactList(pageOf(r.Server, req, paging, total, convertRows(rows, contactAnswer))))
}

func (r contactsResource) create(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	raw, ok := readRawJSON(req, resp, maxBodyBytes)
	if !ok {
		return
	}
	fe := fieldErrors{}
	in := parseContact(raw, "", defaultContactSource, fe)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	c, err := r.store.UpsertContact(req.Request.Context(), principal(req).Account.ID, in, r.cfg.Clock.Now(), claim)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusCreated, contactAnswer(c))
}

func (r contactsResource) replace(req *restful.Request, resp *restful.Response) {
	raw, ok := readRawJSON(req, resp, maxBodyBytes)
	if !ok {
		return
	}
	fe := fieldErrors{}
	// source and external_id are validated like any payload but not applied.
	in := parseContact(raw, "", defaultContactSource, fe)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	id := req.PathParameter("contact")
	c, err := r.store.ReplaceContact(req.Request.Context(), principal(req).Account.ID, id, in, r.cfg.Clock.Now())
	r.respond(req, resp, "contact", contactAnswer(c), err)
}

func (r contactsResource) delete(req *restful.Request, resp *restful.Response) {
	id := req.PathParameter("contact")
	err := r.store.DeleteContact(req.Request.Context(), principal(req).Account.ID, id)
	r.respond(req, resp, "contact", ContactDeleted{Deleted: true}, err)
}

func (r contactsResource) bulkUpsert(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	raw, ok := readRawJSON(req, resp, maxBulkBodyBytes)
	if !ok {
		return
	}
	fe := fieldErrors{}
	var p bulkPayload
	if !decodeObject(raw, &p, "", fe) {
		writeValidation(resp, fe)
		return
	}
	source := text(fe, "source", p.Source, maxSourceLen)
	if source == nil {
		if _, bad := fe["source"]; !bad {
			fe.add("source", "The source field is required.")
		}
		source = new(string)
	}
	var ins []store.ContactInput
	switch {
	case p.Contacts == nil:
		fe.add("contacts", "The contacts field is required.")
	case len(*p.Contacts) > maxBulkContacts:
		fe.add("contacts", "The contacts may not have more than "+strconv.Itoa(maxBulkContacts)+" items; send the rest in another request.")
	default:
		ins = make([]store.ContactInput, len(*p.Contacts))
		for i, item := range *p.Contacts {
			ins[i] = parseContact(item, "contacts."+strconv.Itoa(i)+".", *source, fe)
		}
	}
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	res, err := r.store.BulkUpsertContacts(req.Request.Context(), principal(req).Account.ID, ins, r.cfg.Clock.Now(), claim)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, BulkUpsertContactsResult{ImportedCount: res.Imported, FailedCount: res.Failed})
}

// readRawJSON reads a body of at most limit bytes as any JSON value (400, 413, 415 written by
// readJSONWithin); decodeObject then gives 422s that name each field, with array indexes.
func readRawJSON(req *restful.Request, resp *restful.Response, limit int64) (json.RawMessage, bool) {
	var raw json.RawMessage
	if !readJSONWithin(req, resp, &raw, limit) {
		return nil, false
	}
	return raw, true
}

// decodeObject decodes raw, which must be a JSON object, into dst. prefix is the field path
// of raw ("" for the body, "contacts.3." for an item). Problems are added to fe.
func decodeObject(raw json.RawMessage, dst any, prefix string, fe fieldErrors) bool {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			fe.add("body", "The body must be a JSON object.")
		} else {
			fe.add(name, "The "+name+" must be an object.")
		}
		return false
	}
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return true
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		field := prefix + typeErr.Field
		fe.add(field, "The "+field+" must be "+jsonKind(typeErr.Type.Kind().String())+".")
	} else {
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			name = "body"
		}
		fe.add(name, "The "+name+" could not be read.")
	}
	return false
}

// parseContact validates one contact write payload; prefix names its place in the body.
// The returned input is only meaningful when fe stays empty.
func parseContact(raw json.RawMessage, prefix, defaultSource string, fe fieldErrors) store.ContactInput {
	var p contactPayload
	if !decodeObject(raw, &p, prefix, fe) {
		return store.ContactInput{}
	}
	f := func(name string) string { return prefix + name }
	in := store.ContactInput{Source: defaultSource}
	if s := text(fe, f("source"), p.Source, maxSourceLen); s != nil {
		in.Source = *s
	}
	in.ExternalID = text(fe, f("external_id"), p.ExternalID, maxExternalIDLen)
	if name := text(fe, f("display_name"), p.DisplayName, maxNameLen); name != nil {
		in.DisplayName = *name
	} else if _, bad := fe[f("display_name")]; !bad {
		if p.DisplayName == nil {
			fe.add(f("display_name"), "The "+f("display_name")+" field is required.")
		} else {
			fe.add(f("display_name"), "The "+f("display_name")+" may not be empty.")
		}
	}
	in.FirstName = text(fe, f("first_name"), p.FirstName, maxNameLen)
	in.LastName = text(fe, f("last_name"), p.LastName, maxNameLen)
	in.Company = text(fe, f("company"), p.Company, maxNameLen)
	if in.Email = text(fe, f("email"), p.Email, maxEmailLen); in.Email != nil && !looksLikeEmail(*in.Email) {
		fe.add(f("email"), "The "+f("email")+" must be an email address.")
	}
	in.Notes = text(fe, f("notes"), p.Notes, maxNotesLen)
	if in.ExternalURL = text(fe, f("external_url"), p.ExternalURL, maxURLLen); in.ExternalURL != nil && !isWebURL(*in.ExternalURL) {
		fe.add(f("external_url"), "The "+f("external_url")+" must be an http or https address.")
	}
	in.SourceCreatedAt = dateTime(fe, f("source_created_at"), p.SourceCreatedAt)
	in.SourceUpdatedAt = dateTime(fe, f("source_updated_at"), p.SourceUpdatedAt)

	switch {
	case p.Phones == nil:
		fe.add(f("phones"), "The "+f("phones")+" field is required (an empty array removes every number).")
	case len(*p.Phones) > maxContactPhones:
		fe.add(f("phones"), "The "+f("phones")+" may not have more than "+strconv.Itoa(maxContactPhones)+" items.")
	default:
		in.Phones = make([]store.ContactPhoneInput, 0, len(*p.Phones))
		for i, item := range *p.Phones {
			pp := f("phones." + strconv.Itoa(i) + ".")
			var ph contactPhonePayload
			if !decodeObject(item, &ph, pp, fe) {
				continue
			}
			var out store.ContactPhoneInput
			if ph.Number == nil {
				fe.add(pp+"number", "The "+pp+"number field is required.")
			} else {
				out.Number = readableNumberText(*ph.Number)
			}
			if l := text(fe, pp+"label", ph.Label, maxPhoneLabelLen); l != nil {
				out.Label = *l
			}
			out.IsPrimary = ph.IsPrimary != nil && *ph.IsPrimary
			in.Phones = append(in.Phones, out)
		}
	}
	return in
}

// readableNumberText is the number text worth handing to the phone parser: text too long to
// be a number, or that could not be stored, becomes "", which the store drops as unreadable.
// The spec drops numbers that cannot be read rather than refusing the contact (or its batch).
func readableNumberText(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > maxPhoneNumberLen || !storableText(s) {
		return ""
	}
	return s
}

// text checks an optional string field: surrounding spaces are trimmed and an empty
// value counts as absent (nil). Over-long values and NUL characters are errors.
func text(fe fieldErrors, field string, v *string, max int) *string {
	if v == nil {
		return nil
	}
	s := strings.TrimSpace(*v)
	if s == "" {
		return nil
	}
	if utf8.RuneCountInString(s) > max {
		fe.add(field, "The "+field+" may not be longer than "+strconv.Itoa(max)+" characters.")
		return nil
	}
	if strings.ContainsRune(s, 0) {
		fe.add(field, "The "+field+" may not contain NUL characters.")
		return nil
	}
	return &s
}

// dateTime checks an optional RFC 3339 date-time field.
func dateTime(fe fieldErrors, field string, v *string) *time.Time {
	if v == nil || strings.TrimSpace(*v) == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(*v))
	if err != nil {
		fe.add(field, "The "+field+" must be a date-time with a UTC offset, such as 2024-05-01T09:30:00Z.")
		return nil
	}
	// Contacts show their times in UTC; outside years 1 to 9999 there, a time has no ISO 8601
	// text and the contact (and every list holding it) could not be written out.
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		fe.add(field, "The "+field+" must fall between the years 1 and 9999 in UTC.")
		return nil
	}
	return &t
}

// looksLikeEmail is a loose check: something@domain.tld, without spaces or brackets.
func looksLikeEmail(s string) bool {
	at := strings.LastIndexByte(s, '@')
	if at < 1 || strings.ContainsAny(s, " \t\r\n<>(),;:\"[]") {
		return false
	}
	domain := s[at+1:]
	dot := strings.LastIndexByte(domain, '.')
	return dot > 0 && dot < len(domain)-1 && !strings.Contains(domain, "..")
}

// isWebURL: an absolute http or https address with a host.
func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// ContactPhone is one of a contact's phone numbers, in the order the writing system sent them.
type ContactPhone struct {
	E164      string `json:"e164" required:"true"`
	RawNumber string `json:"raw_number" required:"true"`
	Label     string `json:"label" required:"true"`
	IsPrimary bool   `json:"is_primary" required:"true"`
}

// ContactLink points at the contact elsewhere. The one kind today is "external": the
// contact's page in the system that wrote it (the write payload's external_url).
type ContactLink struct {
	Kind   string `json:"kind" required:"true" enum:"external"`
	URL    string `json:"url" required:"true"`
	Source string `json:"source" required:"true"`
}

// Contact is a contact of the directory as the API shows it (its external_url is an item of links).
type Contact struct {
	PublicID        string         `json:"public_id" required:"true"`
	DisplayName     string         `json:"display_name" required:"true"`
	FirstName       *string        `json:"first_name" required:"true"`
	LastName        *string        `json:"last_name" required:"true"`
	Company         *string        `json:"company" required:"true"`
	Email           *string        `json:"email" required:"true"`
	Notes           *string        `json:"notes" required:"true"`
	Source          string         `json:"source" required:"true"`
	ExternalID      *string        `json:"external_id" required:"true"`
	SourceCreatedAt *time.Time     `json:"source_created_at" required:"true"`
	SourceUpdatedAt *time.Time     `json:"source_updated_at" required:"true"`
	Phones          []ContactPhone `json:"phones" required:"true" nullable:"false"`
	Links           []ContactLink  `json:"links" required:"true" nullable:"false"`
	CreatedAt       time.Time      `json:"created_at" required:"true"`
	UpdatedAt       time.Time      `json:"updated_at" required:"true"`
}

// contactAnswer shapes a contact row as the API answers it.
func contactAnswer(c store.Contact) Contact {
	return Contact{PublicID: c.PublicID, DisplayName: c.DisplayName, FirstName: c.FirstName, LastName: c.LastName,
		Company: c.Company, Email: c.Email, Notes: c.Notes, Source: c.Source, ExternalID: c.ExternalID,
		SourceCreatedAt: c.SourceCreatedAt, SourceUpdatedAt: c.SourceUpdatedAt,
		Phones:    convertRows(c.Phones, func(p store.ContactPhone) ContactPhone { return ContactPhone(p) }),
		Links:     convertRows(c.Links, func(l store.ContactLink) ContactLink { return ContactLink(l) }),
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}
