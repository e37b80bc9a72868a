package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
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
	spec.Info.WithTitle("Switchboard call-handling API").WithVersion(OpenAPIVersion).
		WithDescription("The public v1 API. Money is integer pence (GBP). Every request carries Authorization: Bearer <API_KEY>.")
	spec.Servers = []openapi31.Server{{URL: serverURL}}
	spec.SetHTTPBearerTokenSecurity(securitySchemeName, "API key", "Authorization: Bearer <API_KEY>")

	for _, ws := range c.RegisteredWebServices() {
		for _, route := range ws.Routes() {
			if route.Operation == "getOpenAPI" {
				continue
			}
			if err := addOperation(refl, route); err != nil {
				return nil, fmt.Errorf("describe %s %s: %w", route.Method, route.Path, err)
			}
		}
	}
	webhookSchemas, err := webhookEventSchemas(refl)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return refineDocument(doc, factsByOperation(c), webhookSchemas, rateLimitNote(requestsPerMinute))
}

func addOperation(refl *openapi31.Reflector, route restful.Route) error {
	path := strings.TrimSuffix(strings.TrimPrefix(route.Path, APIRoot), "/")
	if path == "" {
		path = "/"
	}
	oc, err := refl.NewOperationContext(route.Method, path)
	if err != nil {
		return err
	}
	oc.SetID(route.Operation)
	oc.SetSummary(route.Doc)
	oc.SetTags(strings.Split(strings.TrimPrefix(path, "/"), "/")[0])
	if _, protected := route.Metadata[metaAccess]; protected {
		oc.AddSecurity(securitySchemeName)
	}
	if params := paramsStruct(route.ParameterDocs); params != nil {
		oc.AddReqStructure(params)
	}
	if route.ReadSample != nil {
		oc.AddReqStructure(route.ReadSample)
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
	return refl.AddOperation(oc)
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
func paramsStruct(params []*restful.Parameter) any {
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
			values := make([]string, 0, len(d.AllowableValues))
			for v := range d.AllowableValues {
				values = append(values, v)
			}
			sort.Strings(values)
			tag += fmt.Sprintf(` enum:%q`, strings.Join(values, ","))
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
		return nil
	}
	return reflect.New(reflect.StructOf(fields)).Interface()
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
