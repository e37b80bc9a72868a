package apiserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	openapi "github.com/swaggest/openapi-go"
	"github.com/swaggest/openapi-go/openapi31"
)

// OpenAPIVersion is the published interface version (spec: Versioning).
const OpenAPIVersion = "1.0"

// openAPIResource serves GET /v1/openapi.json, built from the same route table that serves
// requests, so the description and the behaviour cannot drift apart.
type openAPIResource struct {
	*Server
	container *restful.Container
}

func (r openAPIResource) AddToContainer(c *restful.Container) {
	var once sync.Once
	var doc []byte
	var buildErr error
	ws := new(restful.WebService).Path(APIRoot + "/openapi.json").Produces(restful.MIME_JSON)
	ws.Route(ws.GET("").Operation("getOpenAPI").Doc("This OpenAPI 3.1 description.").
		Returns(http.StatusOK, "OK", nil).
		To(func(req *restful.Request, resp *restful.Response) {
			once.Do(func() { doc, buildErr = BuildOpenAPI(r.container, r.cfg.BaseURL+APIRoot, r.cfg.RequestsPerMinute) })
			if buildErr != nil {
				r.internalError(req, resp, buildErr)
				return
			}
			resp.Header().Set("Content-Type", restful.MIME_JSON)
			_, _ = resp.Write(doc)
		}))
	c.Add(ws)
}

// BuildOpenAPI describes every route of the container except the description itself.
// requestsPerMinute is the serving server's per-user limit, 0 when no server is known.
func BuildOpenAPI(c *restful.Container, serverURL string, requestsPerMinute int) ([]byte, error) {
	refl := openapi31.NewReflector()
	refl.JSONSchemaReflector().DefaultOptions = append(refl.JSONSchemaReflector().DefaultOptions,
		reflectorOptions(requestBodyTypes(c))...)
	spec := refl.SpecEns()
	note := rateLimitNote(requestsPerMinute)
	describeDocument(spec, serverURL, note)
	var tags []string
	for _, ws := range c.RegisteredWebServices() {
		for _, route := range ws.Routes() {
			if route.Operation == "getOpenAPI" {
				continue
			}
			tag, err := addOperation(refl, route, note)
			if err != nil {
				return nil, fmt.Errorf("describe %s %s: %w", route.Method, route.Path, err)
			}
			tags = append(tags, tag)
		}
	}
	describeTags(spec, tags)
	payload, err := addWebhookPayload(refl)
	if err != nil {
		return nil, err
	}
	addWebhooks(spec, payload)
	return marshalDescription(spec)
}

// addOperation describes one route and returns its tag.
func addOperation(refl *openapi31.Reflector, route restful.Route, rateLimitNote string) (string, error) {
	path := strings.TrimSuffix(strings.TrimPrefix(route.Path, APIRoot), "/")
	if path == "" {
		path = "/"
	}
	tag := strings.Split(strings.TrimPrefix(path, "/"), "/")[0]
	oc, err := refl.NewOperationContext(route.Method, path)
	if err != nil {
		return "", err
	}
	oc.SetID(route.Operation)
	oc.SetSummary(route.Doc)
	oc.SetTags(tag)
	if _, protected := route.Metadata[metaAccess]; protected {
		oc.AddSecurity(securitySchemeName)
	}
	params, err := paramsStruct(route.ParameterDocs)
	if err != nil {
		return "", err
	}
	if params != nil {
		oc.AddReqStructure(params)
	}
	if route.ReadSample != nil {
		// A route that reads a body needs one.
		oc.AddReqStructure(route.ReadSample, openapi.WithCustomize(func(cor openapi.ContentOrReference) {
			if rb, ok := cor.(*openapi31.RequestBodyOrReference); ok && rb.RequestBody != nil {
				rb.RequestBody.WithRequired(true)
			}
		}))
	}
	codes := make([]int, 0, len(route.ResponseErrors))
	for code := range route.ResponseErrors {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	for _, code := range codes {
		re := route.ResponseErrors[code]
		desc := re.Message
		oc.AddRespStructure(re.Model, openapi.WithHTTPStatus(code), func(cu *openapi.ContentUnit) {
			cu.Description = desc
		})
	}
	if err := refl.AddOperation(oc); err != nil {
		return "", err
	}
	return tag, refl.SpecEns().SetupOperation(route.Method, path, func(op *openapi31.Operation) error {
		describeOperation(op, factsOf(route), rateLimitNote)
		return nil
	})
}

func accessDescription(a Access) string {
	var parts []string
	if a.Permission != "" {
		parts = append(parts, "Permission: `"+string(a.Permission)+"`.")
	}
	if a.OwnerOnly {
		parts = append(parts, "Owner only.")
	}
	if a.NeedsIntegrations {
		parts = append(parts, "Needs the Integrations add-on.")
	}
	return strings.Join(parts, " ")
}

// paramsStruct turns go-restful's parameter docs into a struct type whose tags the
// OpenAPI reflector reads (path/query name, description, enum, default, bounds).
func paramsStruct(params []*restful.Parameter) (any, error) {
	var fields []reflect.StructField
	for i, p := range params {
		d := p.Data()
		var in string
		switch d.Kind {
		case restful.PathParameterKind:
			in = "path"
		case restful.QueryParameterKind:
			in = "query"
		case restful.HeaderParameterKind:
			in = "header"
		default:
			continue
		}
		var typ reflect.Type
		switch d.DataType {
		case "integer":
			typ = reflect.TypeOf(0)
		case "boolean":
			typ = reflect.TypeOf(false)
		default:
			typ = reflect.TypeOf("")
		}
		tag := fmt.Sprintf(`%s:%q description:%q`, in, d.Name, d.Description)
		if d.Required || in == "path" {
			tag += ` required:"true"`
		}
		if len(d.AllowableValues) > 0 {
			enum, err := enumTag(typ, d.AllowableValues)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", d.Name, err)
			}
			tag += fmt.Sprintf(` enum:%q`, enum)
		}
		if d.DefaultValue != "" {
			tag += fmt.Sprintf(` default:%q`, d.DefaultValue)
		}
		if d.Minimum != nil {
			tag += ` minimum:"` + strconv.FormatFloat(*d.Minimum, 'f', -1, 64) + `"`
		}
		if d.DataFormat != "" {
			tag += fmt.Sprintf(` format:%q`, d.DataFormat)
		}
		if d.Maximum != nil {
			tag += ` maximum:"` + strconv.FormatFloat(*d.Maximum, 'f', -1, 64) + `"`
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("P%d", i), Type: typ, Tag: reflect.StructTag(tag)})
	}
	if len(fields) == 0 {
		return nil, nil
	}
	return reflect.New(reflect.StructOf(fields)).Interface(), nil
}

// enumTag is the enum tag of a parameter of type typ: a JSON list of numbers, sorted, for an
// integer (jsonschema-go reads a JSON tag as typed values), else the sorted names.
func enumTag(typ reflect.Type, allowed map[string]string) (string, error) {
	names := slices.Sorted(maps.Keys(allowed))
	if typ.Kind() != reflect.Int {
		return strings.Join(names, ","), nil
	}
	numbers := make([]int, 0, len(names))
	for _, v := range names {
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", fmt.Errorf("integer parameter allows %q", v)
		}
		numbers = append(numbers, n)
	}
	slices.Sort(numbers)
	list, err := json.Marshal(numbers)
	return string(list), err
}

// PublishedServerURL is the server named in the committed description (api/openapi/v1.json);
// the served description names the running server's own base URL instead.
const PublishedServerURL = "https://api.switchboard.example" + APIRoot

// PublishedOpenAPI is the description of the API the service serves (the core resources and
// the webhook operations), without a running server: so no limit per minute is named.
func PublishedOpenAPI() ([]byte, error) {
	c := New(Config{BaseURL: "https://api.switchboard.example"}, nil, Webhooks(WebhooksConfig{}), Realtime(RealtimeConfig{}))
	return BuildOpenAPI(c, PublishedServerURL, 0)
}
