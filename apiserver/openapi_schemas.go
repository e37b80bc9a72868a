package apiserver

import (
	"path"
	"reflect"
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"

	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// The JSON-schema rules of the facade's types: what the reflector cannot know from Go types
// alone (always-sent fields, never-null arrays, schema names generators accept).

// schemaNames renames Go types whose names collide with what generators emit (ogen's server
// has a Route type, oapi-codegen a Client and ClientOption), and names the routing answer
// (numbers.NumberRouting) for its route.
var schemaNames = map[string]string{"Route": "CallRoute", "NumberRouting": "Routing"}

// namedForThemselves are the packages whose types the description names without the package:
// the facade's own and the internal ones it answers with.
var namedForThemselves = []string{"Apiserver", "Numbers", "Store", "Webhooks", "Transcription", "Events"}

// reflectorOptions are the JSON-schema rules of every type the description reflects.
// requestTypes are the bodies clients send; every other struct is something the server sends.
func reflectorOptions(requestTypes map[reflect.Type]bool) []func(*jsonschema.ReflectContext) {
	return []func(*jsonschema.ReflectContext){
		jsonschema.InterceptDefName(func(t reflect.Type, name string) string {
			if t.PkgPath() == reflect.TypeOf(events.Payload{}).PkgPath() {
				// The webhook payload's parts: Payload, PayloadCall, ... become WebhookEvent...
				return "WebhookEvent" + strings.TrimPrefix(strings.TrimPrefix(name, "Events"), "Payload")
			}
			pkg := path.Base(t.PkgPath())
			if prefix := strings.ToUpper(pkg[:1]) + pkg[1:]; slices.Contains(namedForThemselves, prefix) {
				name = strings.TrimPrefix(name, prefix)
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
