package apiserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/openapi-go/openapi31"
)

// This file adds to the reflected document, typed, what no route or facade type can say:
// the document's own facts, what applies to every operation (headers, 405/406/default, the
// shared error answers) and the operations' descriptions from their access rules. The
// webhooks the service sends are in openapi_webhooks.go.

// Headers of the answers.
const (
	headerRetryAfter = "Retry-After"
)

// rateLimitNote states the per-user limit (spec: Limits). It is the operator's (serve
// --requests-per-minute): the served description names the serving server's, perMinute; the
// published one (perMinute 0) names none, and RateLimit-Limit says the one in force.
func rateLimitNote(perMinute int) string {
	limit := "to a number the operator sets"
	if perMinute > 0 {
		limit = "on this server to " + strconv.Itoa(perMinute)
	}
	return "Requests are limited per user and minute, shared by all the user's keys, " + limit + "; " +
		"every answer to a request with a valid key carries RateLimit-Limit (that number), RateLimit-Remaining and RateLimit-Reset, " +
		"and a 429 carries Retry-After."
}

// tagDescriptions describe each tag (the first segment of the path).
var tagDescriptions = map[string]string{
	"analytics":          "Call analytics.",
	"balance":            "The prepaid balance.",
	"billing":            "The ledger of the prepaid balance and the receipts of payments.",
	"blocked-callers":    "Callers the account blocks.",
	"calls":              "Calls and their AI summaries; starting a paid transcription.",
	"contacts":           "The contact directory (needs the Integrations add-on).",
	"job-requests":       "Job requests picked out of message slips and calls.",
	"me":                 "The key, its user and account.",
	"media":              "Recording audio through signed links (no API key).",
	"notifications":      "The key's user's notifications.",
	"numbers":            "Phone numbers and how they answer.",
	"reception-messages": "Message slips left with the virtual receptionist.",
	"recordings":         "Recordings, their transcripts and links to their audio.",
	"shared":             "Pages shared by signed links (no API key).",
	"sms":                "Text-message threads.",
	"tasks":              "To-dos.",
	"webhooks":           "Webhook endpoints and their deliveries (owner only).",
}

// routeFacts is what describeOperation needs to know of a route.
type routeFacts struct {
	protected bool
	access    Access
	doc       string
	// headers are the route's own response headers by status (ReturnsWithHeaders).
	headers map[int]map[string]restful.Header
	// accountPerMinute is the route's own limit per account and minute (0: none).
	accountPerMinute int
	// idempotent: the route is declared idempotent (it takes an Idempotency-Key).
	idempotent bool
}

func factsOf(r restful.Route) routeFacts {
	a, protected := r.Metadata[metaAccess].(Access)
	headers := map[int]map[string]restful.Header{}
	for code, re := range r.ResponseErrors {
		headers[code] = re.Headers
	}
	perMinute, _ := r.Metadata[metaAccountLimit].(int)
	_, idempotent := r.Metadata[metaIdempotent]
	return routeFacts{protected: protected, access: a, doc: r.Doc, headers: headers, accountPerMinute: perMinute, idempotent: idempotent}
}

// limitNote states the route's own limit, or "".
func (f routeFacts) limitNote() string {
	if f.accountPerMinute == 0 {
		return ""
	}
	return "Limited to " + strconv.Itoa(f.accountPerMinute) + " a minute per account."
}

func schemaRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func headerRef(name string) openapi31.HeaderOrReference {
	return openapi31.HeaderOrReference{Reference: &openapi31.Reference{Ref: "#/components/headers/" + name}}
}

func responseRef(name string) *openapi31.ResponseOrReference {
	return &openapi31.ResponseOrReference{Reference: &openapi31.Reference{Ref: "#/components/responses/" + name}}
}

func header(desc string, required bool, schema map[string]any) openapi31.HeaderOrReference {
	h := (&openapi31.Header{Schema: schema}).WithDescription(desc)
	if required {
		h.WithRequired(true)
	}
	return openapi31.HeaderOrReference{Header: h}
}

func intSchema() map[string]any { return map[string]any{"type": "integer", "minimum": 0} }

// errorContent is the body of every error answer.
func errorContent() map[string]openapi31.MediaType {
	return map[string]openapi31.MediaType{restful.MIME_JSON: {Schema: schemaRef("ErrorBody")}}
}

// withoutSecurity clears the document's default security for one operation: openapi31 omits an
// empty Security list, so the empty list is written through the operation's extension map,
// which is marshalled into the same object.
func withoutSecurity(op *openapi31.Operation) {
	op.Security = nil
	op.WithMapOfAnythingItem("security", []any{})
}

// describeDocument sets the document-level facts: no route carries them.
func describeDocument(spec *openapi31.Spec, serverURL, rateLimitNote string) {
	spec.Info.WithTitle("Switchboard call-handling API").WithVersion(OpenAPIVersion).
		WithDescription("The public v1 API of Switchboard, the call-handling service. Money is integer pence (GBP). " +
			"Every request carries Authorization: Bearer <API_KEY>, except the signed links under /media and /shared. " +
			rateLimitNote + " Every answer carries X-Request-Id (the caller's, if it sent a sane one: 1 to 200 token characters).").
		WithContact(*(&openapi31.Contact{}).WithName("Switchboard API support").
			WithURL("https://switchboard.example/support").WithEmail("api@switchboard.example")).
		WithLicense(*(&openapi31.License{Name: "Proprietary"}).WithURL("https://switchboard.example/terms"))
	spec.Servers = []openapi31.Server{{URL: serverURL}}
	spec.SetHTTPBearerTokenSecurity(securitySchemeName, "API key", "Authorization: Bearer <API_KEY>")
	spec.Security = []map[string][]string{{securitySchemeName: {}}}

	components := spec.ComponentsEns()
	components.Headers = map[string]openapi31.HeaderOrReference{
		"X-Request-Id": header("The request's id: the caller's X-Request-Id if sane, else a fresh one. Quote it to support.", true,
			map[string]any{"type": "string", "minLength": 1, "maxLength": maxRequestIDLength}),
		"RateLimit-Limit":     header("Requests allowed per minute for the key's user.", true, intSchema()),
		"RateLimit-Remaining": header("Requests left in the current minute.", true, intSchema()),
		"RateLimit-Reset":     header("Seconds until the current minute's budget is renewed.", true, intSchema()),
		headerRetryAfter:      header("Seconds to wait before trying again.", true, intSchema()),
		"WWW-Authenticate":    header("The authentication scheme (Bearer).", true, map[string]any{"type": "string"}),
		// One component, not inline copies: ogen makes a type of each inline enum and then
		// shares one answer type between operations, which does not compile.
		"Idempotent-Replayed": header("true when this is the kept answer of an earlier request with the same Idempotency-Key.", false,
			map[string]any{"type": "string", "enum": []any{"true"}}),
		"Allow": header("The methods the path supports.", true, map[string]any{"type": "string"}),
	}
	// A 503 may come before the key was counted (the database is the one unreachable), and
	// the signed links have no key: the rate-limit headers are optional on these two.
	withOptionalRateLimit := func(h map[string]openapi31.HeaderOrReference) map[string]openapi31.HeaderOrReference {
		for _, name := range rateLimitHeaders {
			h[name] = header("As on every answer to a request with a valid key.", false, intSchema())
		}
		return h
	}
	components.Responses = map[string]openapi31.ResponseOrReference{
		"UnexpectedError": {Response: &openapi31.Response{Description: "Any other error, such as a 500 or a 503.", Content: errorContent(),
			Headers: withOptionalRateLimit(map[string]openapi31.HeaderOrReference{
				"X-Request-Id":   headerRef("X-Request-Id"),
				headerRetryAfter: header("On a 503: seconds to wait before trying again.", false, intSchema()),
			})}},
		"ServiceUnavailable": {Response: &openapi31.Response{Description: "A service behind the API (the database or kube-apiserver) is briefly unavailable; " +
			"Retry-After says when to try again.", Content: errorContent(),
			Headers: withOptionalRateLimit(map[string]openapi31.HeaderOrReference{
				"X-Request-Id": headerRef("X-Request-Id"), headerRetryAfter: headerRef(headerRetryAfter)})}},
	}
}

var rateLimitHeaders = []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}

// describeOperation adds to a reflected operation what its route says but the reflector
// cannot write, and what the container answers on every path.
func describeOperation(op *openapi31.Operation, f routeFacts, rateLimitNote string) {
	// The reflector takes one summary; the description adds the route's access rule and limit.
	desc := f.doc
	if a := accessDescription(f.access); a != "" {
		desc += "\n\n" + a
	}
	if l := f.limitNote(); l != "" {
		desc += " " + l
	}
	op.WithDescription(strings.TrimSpace(desc))
	// The reflector cannot clear the document's default security for one operation.
	if !f.protected {
		withoutSecurity(op)
	}
	responses := op.ResponsesEns()
	// The container, not a route, answers these.
	responses.WithMapOfResponseOrReferenceValuesItem("405", openapi31.ResponseOrReference{Response: &openapi31.Response{
		Description: "The path does not support this method.", Content: errorContent(),
		Headers: map[string]openapi31.HeaderOrReference{"Allow": headerRef("Allow")}}})
	responses.WithMapOfResponseOrReferenceValuesItem("406", openapi31.ResponseOrReference{Response: &openapi31.Response{
		Description: "The client does not accept JSON.", Content: errorContent()}})
	// The shared error answers are components: ogen keys a wrapped answer type by its body
	// and header names only, so inline copies that differ in required headers or status
	// code collide in its output and do not compile.
	responses.Default = responseRef("UnexpectedError")
	if _, ok := responses.MapOfResponseOrReferenceValues["503"]; ok {
		responses.MapOfResponseOrReferenceValues["503"] = *responseRef("ServiceUnavailable")
	}
	for code, r := range responses.MapOfResponseOrReferenceValues {
		if r.Response == nil {
			continue
		}
		status, _ := strconv.Atoi(code)
		h := r.Response.Headers
		if h == nil {
			h = map[string]openapi31.HeaderOrReference{}
		}
		// Every answer carries X-Request-Id.
		h["X-Request-Id"] = headerRef("X-Request-Id")
		if f.idempotent && status != http.StatusConflict && status < 500 {
			// A repeat with the same Idempotency-Key replays the first answer and says so.
			h["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
		}
		// The reflector reads headers from struct tags only; the route declares its own
		// with ReturnsWithHeaders.
		for name, rh := range f.headers[status] {
			schema := map[string]any{"type": "string"}
			if rh.Items != nil && rh.Type != "" {
				schema["type"] = rh.Type
			}
			h[name] = header(rh.Description, false, schema)
		}
		// Every answer to a request with a valid key counts it; a 401 had none.
		if f.protected && status != http.StatusUnauthorized {
			for _, name := range rateLimitHeaders {
				h[name] = headerRef(name)
			}
		}
		switch status {
		case http.StatusTooManyRequests:
			// The limit is the serving server's, which no route knows.
			h[headerRetryAfter] = headerRef(headerRetryAfter)
			r.Response.Description = strings.TrimSpace("Too many requests: " + rateLimitNote + " " + f.limitNote())
		case http.StatusUnauthorized:
			h["WWW-Authenticate"] = headerRef("WWW-Authenticate")
		}
		r.Response.Headers = h
	}
}

// marshalDescription writes the document with sorted keys, as encoding/json writes a map: the
// committed description's diffs then show what changed, not the order openapi31's types
// marshal their fields in.
func marshalDescription(spec *openapi31.Spec) ([]byte, error) {
	doc, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var sorted any
	if err := json.Unmarshal(doc, &sorted); err != nil {
		return nil, err
	}
	dropDefaultHeaderStyle(sorted)
	return json.MarshalIndent(sorted, "", "  ")
}

// dropDefaultHeaderStyle removes the style openapi31 writes into every header: simple is the
// only style a header has (OpenAPI 3.1, Header Object), and the description leaves it out.
func dropDefaultHeaderStyle(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if headers, ok := e.(map[string]any); ok && k == "headers" {
				for _, h := range headers {
					if h, ok := h.(map[string]any); ok && h["style"] == "simple" {
						delete(h, "style")
					}
				}
			}
			dropDefaultHeaderStyle(e)
		}
	case []any:
		for _, e := range t {
			dropDefaultHeaderStyle(e)
		}
	}
}

// describeTags describes the tags the operations use, sorted.
func describeTags(spec *openapi31.Spec, tags []string) {
	slices.Sort(tags)
	for _, t := range slices.Compact(tags) {
		spec.Tags = append(spec.Tags, *(&openapi31.Tag{Name: t}).WithDescription(tagDescriptions[t]))
	}
}
