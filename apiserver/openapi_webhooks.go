package apiserver

import (
	"reflect"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"
	"github.com/swaggest/openapi-go/openapi31"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// The webhooks section of the description: the requests the service sends to endpoints,
// which no route of the container serves.

// addWebhookPayload puts the schemas of the webhook payload (internal/webhook/events), which no route
// takes or answers, in the components and returns the payload with every $ref inlined.
func addWebhookPayload(refl *openapi31.Reflector) (map[string]any, error) {
	components := refl.SpecEns().ComponentsEns()
	var collectErr error
	_, err := refl.JSONSchemaReflector().Reflect(events.Payload{},
		jsonschema.RootRef, jsonschema.DefinitionsPrefix("#/components/schemas/"),
		// The webhooks send these events; the live channel's progress events share the payload's
		// shape but not this list, so the enum is the description's, not the type's.
		jsonschema.InterceptSchema(func(p jsonschema.InterceptSchemaParams) (bool, error) {
			if p.Processed && p.Value.IsValid() && p.Value.Type() == reflect.TypeOf(events.Payload{}) {
				if e := p.Schema.Properties["event"].TypeObject; e != nil {
					e.Enum = toAny(eventNames(true))
				}
			}
			return false, nil
		}),
		jsonschema.CollectDefinitions(func(name string, s jsonschema.Schema) {
			sm, err := s.ToSchemaOrBool().ToSimpleMap()
			if err != nil && collectErr == nil {
				collectErr = err
			}
			components.WithSchemasItem(name, sm)
		}))
	if err == nil {
		err = collectErr
	}
	if err != nil {
		return nil, err
	}
	return inlineRefs(schemaRef("WebhookEvent"), components.Schemas), nil
}

// addWebhooks describes the requests the service sends to endpoints (spec: Events). The
// payload is inlined, not a $ref: oapi-codegen (v2.8) prunes schemas that only the webhooks
// section refers to and then fails to compile its own webhook body types. The named
// WebhookEvent* schemas stay in components for generators that keep them.
func addWebhooks(spec *openapi31.Spec, payload map[string]any) {
	headers := []openapi31.ParameterOrReference{
		headerParam("X-Service-Event", "The event name.", map[string]any{"type": "string", "enum": eventNames(true)}),
		headerParam("X-Service-Delivery", "The event's id; the same on every retry and resend, for de-duplication.", map[string]any{"type": "string", "format": "uuid"}),
		headerParam("X-Service-Timestamp", "When this attempt was sent, in Unix seconds.", map[string]any{"type": "integer"}),
		headerParam("X-Service-Signature", "Lower-case hex HMAC-SHA256, keyed with the endpoint's signing secret (whsec_...), "+
			"of the timestamp text, a dot, and the raw request body. Compare in constant time and refuse timestamps more than five minutes old.",
			map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$"}),
		headerParam("User-Agent", "Service-Webhooks/1.", map[string]any{"type": "string"}),
		// Standard Webhooks (standardwebhooks.com), so off-the-shelf libraries verify too.
		headerParam(send.HeaderStandardID, "Standard Webhooks: the event's id, the same as X-Service-Delivery.", map[string]any{"type": "string", "format": "uuid"}),
		headerParam(send.HeaderStandardTimestamp, "Standard Webhooks: when this attempt was sent, in Unix seconds (the same as X-Service-Timestamp).", map[string]any{"type": "integer"}),
		headerParam(send.HeaderStandardSignature, "Standard Webhooks: v1, a comma and the base64 HMAC-SHA256 of the webhook-id, a dot, "+
			"the webhook-timestamp, a dot and the raw body, keyed with the base64-decoded text after whsec_ in the endpoint's signing secret. "+
			"Any Standard Webhooks library verifies it with the secret as shown.",
			map[string]any{"type": "string", "pattern": "^v1,[A-Za-z0-9+/]{43}=$"}),
	}
	for _, name := range eventNames(true) {
		op := (&openapi31.Operation{Tags: []string{"webhooks"}, Parameters: headers}).
			WithID(webhookOperationID(name)).
			WithSummary("The " + name + " event.").
			WithDescription(events.Descriptions[name] + "\n\nAnswer with any 2xx within 10 seconds; redirects are not followed. " +
				"Without a 2xx in time the delivery is retried after 1 minute, 5 minutes, 30 minutes, 2 hours and 10 hours, then marked failed.").
			WithRequestBody(openapi31.RequestBodyOrReference{RequestBody: (&openapi31.RequestBody{
				Content: map[string]openapi31.MediaType{restful.MIME_JSON: {Schema: payload}}}).WithRequired(true)})
		withoutSecurity(op)
		op.ResponsesEns().WithMapOfResponseOrReferenceValuesItem("2XX", openapi31.ResponseOrReference{
			Response: &openapi31.Response{Description: "Received; any 2xx status."}})
		op.Responses.Default = &openapi31.ResponseOrReference{Response: &openapi31.Response{Description: "Not received; the delivery is retried."}}
		spec.WithWebhooksItem(name, openapi31.PathItemOrReference{PathItem: &openapi31.PathItem{Post: op}})
	}
}

func headerParam(name, desc string, schema map[string]any) openapi31.ParameterOrReference {
	return openapi31.ParameterOrReference{Parameter: (&openapi31.Parameter{Name: name, In: openapi31.ParameterInHeader, Schema: schema}).
		WithRequired(true).WithDescription(desc)}
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

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
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
func inlineRefs(schema map[string]any, schemas map[string]map[string]any) map[string]any {
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			if r, ok := t["$ref"].(string); ok {
				return walk(schemas[strings.TrimPrefix(r, "#/components/schemas/")])
			}
			out := map[string]any{}
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
	return walk(schema).(map[string]any)
}
