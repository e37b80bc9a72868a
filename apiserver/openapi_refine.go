package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/events"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// This file makes the generated description say everything the server enforces: what the
// reflector cannot know from Go types alone (always-sent fields, never-null arrays), and what
// applies to every operation (headers, 405/406/default, security of signed links, the
// webhooks the service sends).

// schemaNames renames Go types whose names collide with what generators emit: ogen's server
// has a Route type, oapi-codegen a Client and ClientOption.
var schemaNames = map[string]string{"Route": "CallRoute"}

// reflectorOptions are the JSON-schema rules of every type the description reflects.
// requestTypes are the bodies clients send; every other struct is something the server sends.
func reflectorOptions(requestTypes map[reflect.Type]bool) []func(*jsonschema.ReflectContext) {
	return []func(*jsonschema.ReflectContext){
		jsonschema.InterceptDefName(func(t reflect.Type, name string) string {
			if t.PkgPath() == reflect.TypeOf(events.Payload{}).PkgPath() {
				// The webhook payload's parts: Payload, PayloadCall, ... become WebhookEvent...
				return "WebhookEvent" + strings.TrimPrefix(strings.TrimPrefix(name, "Events"), "Payload")
			}
			for _, pkg := range []string{"Apiserver", "Store", "Webhooks", "Transcription", "Events"} {
				name = strings.TrimPrefix(name, pkg)
			}
			if renamed, ok := schemaNames[name]; ok {
				return renamed
			}
			return name
		}),
		// The server sends an empty array or object, never null, for a slice or map.
		jsonschema.InterceptNullability(func(p jsonschema.InterceptNullabilityParams) {
			if k := p.Type.Kind(); (k == reflect.Slice || k == reflect.Map) && p.Schema.HasType(jsonschema.Null) {
				p.Schema.RemoveType(jsonschema.Null)
			}
			// A pointer to a struct is null when unset: say so next to the shared definition
			// (which is not nullable itself).
			if p.Type.Kind() == reflect.Pointer && p.Schema.Ref != nil && !p.OmitEmpty && p.Schema.AnyOf == nil {
				target := jsonschema.Schema{Ref: p.Schema.Ref}
				*p.Schema = jsonschema.Schema{Description: p.Schema.Description,
					AnyOf: []jsonschema.SchemaOrBool{jsonschema.Null.ToSchemaOrBool(), target.ToSchemaOrBool()}}
			}
		}),
		// A nullable field with a fixed set of values (an enum tag) may also be null.
		jsonschema.InterceptProp(func(p jsonschema.InterceptPropParams) error {
			if s := p.PropertySchema; p.Processed && s.HasType(jsonschema.Null) && len(s.Enum) > 0 && !slices.Contains(s.Enum, nil) {
				s.Enum = append(s.Enum, nil)
			}
			return nil
		}),
		// Every field of a response without omitempty is always sent: list it in required, so
		// generated clients need no pointer or optional wrapper for it.
		jsonschema.InterceptSchema(func(p jsonschema.InterceptSchemaParams) (bool, error) {
			if !p.Processed || !p.Value.IsValid() {
				return false, nil
			}
			t := p.Value.Type()
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || requestTypes[t] || len(p.Schema.Properties) == 0 {
				return false, nil
			}
			for _, name := range alwaysSentFields(t) {
				if _, ok := p.Schema.Properties[name]; ok && !slices.Contains(p.Schema.Required, name) {
					p.Schema.Required = append(p.Schema.Required, name)
				}
			}
			return false, nil
		}),
	}
}

// alwaysSentFields are the JSON names of t's fields that encoding/json always writes.
func alwaysSentFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, alwaysSentFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// requestBodyTypes are the struct types reachable from the routes' request bodies.
func requestBodyTypes(c *restful.Container) map[reflect.Type]bool {
	out := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || out[t] {
			return
		}
		out[t] = true
		for i := 0; i < t.NumField(); i++ {
			walk(t.Field(i).Type)
		}
	}
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			if r.ReadSample != nil {
				walk(reflect.TypeOf(r.ReadSample))
			}
		}
	}
	return out
}

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

// routeFacts is what refineDocument needs to know of each operation.
type routeFacts struct {
	protected bool
	hasBody   bool
	access    Access
	doc       string
	// headers are the route's own response headers by status (ReturnsWithHeaders).
	headers map[int]map[string]restful.Header
	// accountPerMinute is the route's own limit per account and minute (0: none).
	accountPerMinute int
	// idempotent: the route is declared idempotent (it takes an Idempotency-Key).
	idempotent bool
}

// limitNote states the route's own limit, or "".
func (f routeFacts) limitNote() string {
	if f.accountPerMinute == 0 {
		return ""
	}
	return "Limited to " + strconv.Itoa(f.accountPerMinute) + " a minute per account."
}

func factsByOperation(c *restful.Container) map[string]routeFacts {
	out := map[string]routeFacts{}
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			a, protected := r.Metadata[metaAccess].(Access)
			headers := map[int]map[string]restful.Header{}
			for code, re := range r.ResponseErrors {
				headers[code] = re.Headers
			}
			perMinute, _ := r.Metadata[metaAccountLimit].(int)
			_, idempotent := r.Metadata[metaIdempotent]
			out[r.Operation] = routeFacts{protected: protected, hasBody: r.ReadSample != nil, access: a, doc: r.Doc, headers: headers,
				accountPerMinute: perMinute, idempotent: idempotent}
		}
	}
	return out
}

type jsonObject = map[string]any

func obj(v any) jsonObject {
	m, _ := v.(jsonObject)
	return m
}

func ref(name string) jsonObject { return jsonObject{"$ref": "#/components/schemas/" + name} }

func responseRef(name string) jsonObject { return jsonObject{"$ref": "#/components/responses/" + name} }

func intHeader(desc string) jsonObject {
	return jsonObject{"description": desc, "required": true, "schema": jsonObject{"type": "integer", "minimum": 0}}
}

// refineDocument edits the reflected document (as JSON) with what applies to every operation.
func refineDocument(doc []byte, facts map[string]routeFacts, webhookSchemas jsonObject, rateLimitNote string) ([]byte, error) {
	var d jsonObject
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	// Document-level facts: no route carries them.
	info := obj(d["info"])
	info["description"] = "The public v1 API of Switchboard, the call-handling service. Money is integer pence (GBP). " +
		"Every request carries Authorization: Bearer <API_KEY>, except the signed links under /media and /shared. " +
		rateLimitNote + " Every answer carries X-Request-Id (the caller's, if it sent a sane one: 1 to 200 token characters)."
	info["contact"] = jsonObject{"name": "Switchboard API support", "url": "https://switchboard.example/support", "email": "api@switchboard.example"}
	info["license"] = jsonObject{"name": "Proprietary", "url": "https://switchboard.example/terms"}
	d["security"] = []any{jsonObject{securitySchemeName: []any{}}}

	components := obj(d["components"])
	schemas := obj(components["schemas"])
	// The payloads the service sends are no route's request or answer.
	for name, s := range webhookSchemas {
		schemas[name] = s
	}
	// Event names are an enum wherever an endpoint's events are listed or set: the values are
	// a Go slice (SubscribableEvents), which a tag cannot name.
	for _, name := range []string{"WebhookCreate", "WebhookChange", "Webhook", "WebhookList"} {
		if items := obj(obj(obj(obj(schemas[name])["properties"])["events"])["items"]); items != nil {
			items["enum"] = toAny(eventNames(false))
		}
	}
	for name, s := range schemas {
		props := obj(obj(s)["properties"])
		for prop, values := range propertyEnums[name] {
			setEnum(obj(props[prop]), values)
		}
	}
	// The abilities are a Go slice (auth.AllAbilities), which a tag cannot name.
	if items := obj(obj(obj(obj(schemas["Me"])["properties"])["abilities"])["items"]); items != nil {
		abilities := make([]any, len(auth.AllAbilities))
		for i, a := range auth.AllAbilities {
			abilities[i] = string(a)
		}
		items["enum"] = abilities
	}
	// A plain refusal has only a message, so it is told apart from the add-on refusal.
	if eb := obj(schemas["ErrorBody"]); eb != nil {
		eb["additionalProperties"] = false
	}
	components["headers"] = jsonObject{
		"X-Request-Id": jsonObject{"description": "The request's id: the caller's X-Request-Id if sane, else a fresh one. Quote it to support.",
			"required": true, "schema": jsonObject{"type": "string", "minLength": 1, "maxLength": maxRequestIDLength}},
		"RateLimit-Limit":     intHeader("Requests allowed per minute for the key's user."),
		"RateLimit-Remaining": intHeader("Requests left in the current minute."),
		"RateLimit-Reset":     intHeader("Seconds until the current minute's budget is renewed."),
		"Retry-After":         intHeader("Seconds to wait before trying again."),
		"WWW-Authenticate":    jsonObject{"description": "The authentication scheme (Bearer).", "required": true, "schema": jsonObject{"type": "string"}},
		// One component, not inline copies: ogen makes a type of each inline enum and then
		// shares one answer type between operations, which does not compile.
		"Idempotent-Replayed": jsonObject{"description": "true when this is the kept answer of an earlier request with the same Idempotency-Key.",
			"schema": jsonObject{"type": "string", "enum": []any{"true"}}},
		"Allow": jsonObject{"description": "The methods the path supports.", "required": true, "schema": jsonObject{"type": "string"}},
	}
	headerRef := func(name string) jsonObject { return jsonObject{"$ref": "#/components/headers/" + name} }
	// A 503 may come before the key was counted (the database is the one unreachable), and
	// the signed links have no key: the rate-limit headers are optional on these two.
	optionalRateLimit := func(h jsonObject) jsonObject {
		for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			h[name] = jsonObject{"description": "As on every answer to a request with a valid key.",
				"schema": jsonObject{"type": "integer", "minimum": 0}}
		}
		return h
	}
	errorContent := jsonObject{"application/json": jsonObject{"schema": ref("ErrorBody")}}
	components["responses"] = jsonObject{
		"UnexpectedError": jsonObject{"description": "Any other error, such as a 500 or a 503.", "content": errorContent,
			"headers": optionalRateLimit(jsonObject{
				"X-Request-Id": headerRef("X-Request-Id"),
				headerRetryAfter: jsonObject{"description": "On a 503: seconds to wait before trying again.",
					"schema": jsonObject{"type": "integer", "minimum": 0}},
			})},
		"ServiceUnavailable": jsonObject{"description": "A service behind the API (the database or kube-apiserver) is briefly unavailable; " +
			"Retry-After says when to try again.", "content": errorContent,
			"headers": optionalRateLimit(jsonObject{"X-Request-Id": headerRef("X-Request-Id"), headerRetryAfter: headerRef("Retry-After")})},
	}

	var tags []string
	for path, item := range obj(d["paths"]) {
		for method, o := range obj(item) {
			op := obj(o)
			if op == nil || !slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				continue
			}
			id, _ := op["operationId"].(string)
			f := facts[id]
			for _, t := range op["tags"].([]any) {
				if s := t.(string); !slices.Contains(tags, s) {
					tags = append(tags, s)
				}
			}
			// The reflector takes one summary; the description adds the route's access rule and limit.
			desc := f.doc
			if a := accessDescription(f.access); a != "" {
				desc += "\n\n" + a
			}
			if l := f.limitNote(); l != "" {
				desc += " " + l
			}
			op["description"] = strings.TrimSpace(desc)
			// The reflector cannot clear the document's default security for one operation.
			if !f.protected {
				op["security"] = []any{}
				delete(op, "x-security")
			}
			// The reflector marks no request body required.
			if f.hasBody {
				if rb := obj(op["requestBody"]); rb != nil {
					rb["required"] = true
				}
			}
			// Integer enums come out of the parameter tags as text.
			for _, p := range asList(op["parameters"]) {
				s := obj(obj(p)["schema"])
				if s["type"] != "integer" || s["enum"] == nil {
					continue
				}
				var ints []int
				for _, v := range asList(s["enum"]) {
					n, err := strconv.Atoi(v.(string))
					if err != nil {
						return nil, err
					}
					ints = append(ints, n)
				}
				sort.Ints(ints)
				enum := make([]any, len(ints))
				for i, n := range ints {
					enum[i] = n
				}
				s["enum"] = enum
			}
			responses := obj(op["responses"])
			// A route declares one body per status; a 403 of a gated route has two.
			if f.protected && f.access.NeedsIntegrations {
				if r := obj(responses["403"]); r != nil {
					r["content"] = jsonObject{"application/json": jsonObject{"schema": jsonObject{
						"oneOf": []any{ref("ErrorBody"), ref("AddonRefusalBody")}}}}
					r["description"] = "The key lacks a permission or the user's role does not allow it ({message}), " +
						"or the account lacks Integrations (an add-on refusal, told apart by its reason)."
				}
			}
			// The container, not a route, answers these.
			errBody := jsonObject{"application/json": jsonObject{"schema": ref("ErrorBody")}}
			responses["405"] = jsonObject{"description": "The path does not support this method.", "content": errBody,
				"headers": jsonObject{"Allow": headerRef("Allow")}}
			responses["406"] = jsonObject{"description": "The client does not accept JSON.", "content": errBody}
			// The shared error answers are components: ogen keys a wrapped answer type by its body
			// and header names only, so inline copies that differ in required headers or status
			// code collide in its output and do not compile.
			responses["default"] = responseRef("UnexpectedError")
			if responses["503"] != nil {
				responses["503"] = responseRef("ServiceUnavailable")
			}
			for code, r := range responses {
				resp := obj(r)
				if _, isRef := resp["$ref"]; isRef {
					continue
				}
				h := obj(resp["headers"])
				if h == nil {
					h = jsonObject{}
				}
				h["X-Request-Id"] = headerRef("X-Request-Id")
				status, _ := strconv.Atoi(code)
				if f.idempotent && code != "default" && status != http.StatusConflict && status < 500 {
					// A repeat with the same Idempotency-Key replays the first answer and says so.
					h["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
				}
				for name, rh := range f.headers[status] {
					schema := jsonObject{"type": "string"}
					if rh.Items != nil && rh.Type != "" {
						schema["type"] = rh.Type
					}
					h[name] = jsonObject{"description": rh.Description, "schema": schema}
				}
				// A 503 may come before the key was counted (the database is the one unreachable).
				if f.protected && status != http.StatusUnauthorized {
					for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
						h[name] = headerRef(name)
					}
				}
				switch status {
				case http.StatusTooManyRequests:
					h[headerRetryAfter] = headerRef("Retry-After")
					resp["description"] = "Too many requests: " + strings.TrimSuffix(rateLimitNote, ".") +
						map[bool]string{true: ". " + f.limitNote(), false: "."}[f.limitNote() != ""]
				case http.StatusUnauthorized:
					h["WWW-Authenticate"] = headerRef("WWW-Authenticate")
				}
				resp["headers"] = h
			}
			_ = path
		}
	}
	sort.Strings(tags)
	tagList := make([]any, 0, len(tags))
	for _, t := range tags {
		tagList = append(tagList, jsonObject{"name": t, "description": tagDescriptions[t]})
	}
	d["tags"] = tagList
	// The payload is inlined, not a $ref: oapi-codegen (v2.8) prunes schemas that only the
	// webhooks section refers to and then fails to compile its own webhook body types. The
	// named WebhookEvent* schemas stay in components for generators that keep them.
	d["webhooks"] = webhooksSection(inlineRefs(ref("WebhookEvent"), schemas))
	return json.MarshalIndent(d, "", "  ")
}

// webhooksSection describes the requests the service sends to endpoints (spec: Events).
func webhooksSection(payload jsonObject) jsonObject {
	headers := []any{
		headerParam("X-Service-Event", "The event name.", jsonObject{"type": "string", "enum": eventNames(true)}),
		headerParam("X-Service-Delivery", "The event's id; the same on every retry and resend, for de-duplication.", jsonObject{"type": "string", "format": "uuid"}),
		headerParam("X-Service-Timestamp", "When this attempt was sent, in Unix seconds.", jsonObject{"type": "integer"}),
		headerParam("X-Service-Signature", "Lower-case hex HMAC-SHA256, keyed with the endpoint's signing secret (whsec_...), "+
			"of the timestamp text, a dot, and the raw request body. Compare in constant time and refuse timestamps more than five minutes old.",
			jsonObject{"type": "string", "pattern": "^[0-9a-f]{64}$"}),
		headerParam("User-Agent", "Service-Webhooks/1.", jsonObject{"type": "string"}),
		// Standard Webhooks (standardwebhooks.com), so off-the-shelf libraries verify too.
		headerParam(webhooks.HeaderStandardID, "Standard Webhooks: the event's id, the same as X-Service-Delivery.", jsonObject{"type": "string", "format": "uuid"}),
		headerParam(webhooks.HeaderStandardTimestamp, "Standard Webhooks: when this attempt was sent, in Unix seconds (the same as X-Service-Timestamp).", jsonObject{"type": "integer"}),
		headerParam(webhooks.HeaderStandardSignature, "Standard Webhooks: v1, a comma and the base64 HMAC-SHA256 of the webhook-id, a dot, "+
			"the webhook-timestamp, a dot and the raw body, keyed with the base64-decoded text after whsec_ in the endpoint's signing secret. "+
			"Any Standard Webhooks library verifies it with the secret as shown.",
			jsonObject{"type": "string", "pattern": "^v1,[A-Za-z0-9+/]{43}=$"}),
	}
	out := jsonObject{}
	for _, name := range eventNames(true) {
		out[name] = jsonObject{"post": jsonObject{
			"operationId": webhookOperationID(name),
			"summary":     "The " + name + " event.",
			"description": webhookEventDescriptions[name] + "\n\nAnswer with any 2xx within 10 seconds; redirects are not followed. " +
				"Without a 2xx in time the delivery is retried after 1 minute, 5 minutes, 30 minutes, 2 hours and 10 hours, then marked failed.",
			"tags":        []any{"webhooks"},
			"security":    []any{},
			"parameters":  headers,
			"requestBody": jsonObject{"required": true, "content": jsonObject{"application/json": jsonObject{"schema": payload}}},
			"responses": jsonObject{
				"2XX":     jsonObject{"description": "Received; any 2xx status."},
				"default": jsonObject{"description": "Not received; the delivery is retried."},
			},
		}}
	}
	return out
}

var webhookEventDescriptions = map[string]string{
	events.CallEnded:         "Any call ends, except blocked and emergency calls.",
	events.VoicemailReceived: "A voicemail has been delivered, once per voicemail; links.shared_page is set.",
	events.TranscriptReady:   "A recorded call (not a voicemail) has its transcript and, if one could be made, its AI summary.",
	events.Test:              "A test event: test is true, call.id is a fixed marker, card is full and links.dashboard, transcript_api and recording_api are null.",
}

func headerParam(name, desc string, schema jsonObject) jsonObject {
	return jsonObject{"name": name, "in": "header", "required": true, "description": desc, "schema": schema}
}

// eventNames are the events an endpoint can subscribe to, and with test also test.
func eventNames(withTest bool) []string {
	out := make([]string, 0, len(switchboardv1alpha1.SubscribableEvents)+1)
	for _, e := range switchboardv1alpha1.SubscribableEvents {
		out = append(out, string(e))
	}
	if withTest {
		out = append(out, events.Test)
	}
	return out
}

// webhookEventSchemas reflects the webhook payload (internal/events) into component schemas.
func webhookEventSchemas(refl interface {
	JSONSchemaReflector() *jsonschema.Reflector
}) (jsonObject, error) {
	defs := map[string]jsonschema.Schema{}
	root, err := refl.JSONSchemaReflector().Reflect(events.Payload{},
		jsonschema.RootRef, jsonschema.DefinitionsPrefix("#/components/schemas/"),
		jsonschema.CollectDefinitions(func(name string, s jsonschema.Schema) { defs[name] = s }))
	if err != nil {
		return nil, err
	}
	_ = root
	out := jsonObject{}
	for name, s := range defs {
		data, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		var m jsonObject
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		out[name] = m
	}
	// What the Go types do not say (spec: Payload).
	if p := obj(out["WebhookEvent"]); p != nil {
		props := obj(p["properties"])
		if e := obj(props["event"]); e != nil {
			e["enum"] = toAny(eventNames(true))
		}
		if id := obj(props["id"]); id != nil {
			id["format"] = "uuid"
			id["description"] = "The event's id; the same as X-Service-Delivery."
		}
		if t := obj(props["test"]); t != nil {
			t["const"] = true
			t["description"] = "Present, and true, only on test events."
		}
	}
	return out, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// propertyEnums are the fixed sets of values (the database's CHECK constraints) of the numbers
// schemas, by schema and property: those are reflected from store rows, which carry no
// schema tags; every facade type states its own with an enum tag.
var propertyEnums = map[string]map[string][]string{
	"Number":         {"status": numberStatuses},
	"NumberSummary":  {"status": numberStatuses},
	"RoutingNumber":  {"status": numberStatuses},
	"CallRoute":      {"mode": routeModes},
	"ScheduledRoute": {"mode": routeModes},
	"OverrideRoute":  {"mode": routeModes},
}

var (
	numberStatuses = []string{"assigned", "porting", "releasing", "released"}
	routeModes     = []string{"forward", "voicemail", "ivr", "receptionist"}
)

// setEnum gives a text property its values; a nullable one keeps null among them.
func setEnum(prop jsonObject, values []string) {
	if prop == nil || prop["enum"] != nil || (prop["type"] != "string" && !slices.Contains(asList(prop["type"]), any("string"))) {
		return
	}
	enum := toAny(values)
	if types, ok := prop["type"].([]any); ok && slices.Contains(types, any("null")) {
		enum = append(enum, nil)
	}
	prop["enum"] = enum
}

// webhookOperationID names the operation of an event: call.ended gives callEndedEvent.
func webhookOperationID(event string) string {
	parts := strings.Split(event, ".")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "") + "Event"
}

// inlineRefs is a deep copy of schema with every component $ref replaced by the component
// (the payload's schemas refer to no schema that refers back).
func inlineRefs(schema any, schemas jsonObject) jsonObject {
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case jsonObject:
			if r, ok := t["$ref"].(string); ok {
				return walk(schemas[strings.TrimPrefix(r, "#/components/schemas/")])
			}
			out := jsonObject{}
			for k, e := range t {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return obj(walk(schema))
}
