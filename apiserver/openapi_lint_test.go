package apiserver_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// TestServedOpenAPILintsStrictly lints GET /v1/openapi.json with a third-party OpenAPI 3.1
// validator at its strictest, then checks what the issue asks every operation to declare.
func TestServedOpenAPILintsStrictly(t *testing.T) {
	h := newHarness(t)
	resp := h.api.DoUnchecked(t, "", "GET", "/v1/openapi.json", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/openapi.json: %s", resp)
	}
	doc, err := libopenapi.NewDocument(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatalf("the description does not build: %v", err)
	}
	v, errs := validator.NewValidator(doc, apitest.StrictOptions()...)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("invalid: %s: %s", e.Message, e.Reason)
		}
	}

	var d map[string]any
	resp.JSON(t, &d)
	info := d["info"].(map[string]any)
	if info["contact"] == nil || info["license"] == nil {
		t.Errorf("info lacks contact or license: %v", info)
	}
	// Names that collide with what ogen or oapi-codegen emit.
	for name := range d["components"].(map[string]any)["schemas"].(map[string]any) {
		if slices.Contains([]string{"Route", "Router", "Server", "Handler", "Client", "ClientOption", "Invoker", "Option", "SecuritySource", "Labeler", "ErrorHandler", "OperationName"}, name) {
			t.Errorf("component schema %q collides with generated code", name)
		}
	}
	for path, item := range d["paths"].(map[string]any) {
		for method, o := range item.(map[string]any) {
			op := o.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			if op["operationId"] == "" || op["description"] == "" || len(op["tags"].([]any)) == 0 {
				t.Errorf("%s lacks an id, description or tag", where)
			}
			signed := strings.HasPrefix(path, "/media/") || strings.HasPrefix(path, "/shared/") || path == "/openapi.json"
			if sec, ok := op["security"].([]any); signed && (!ok || len(sec) != 0) {
				t.Errorf("%s is a signed link but does not declare security: []", where)
			}
			responses := op["responses"].(map[string]any)
			for _, code := range []string{"405", "406", "default"} {
				if responses[code] == nil {
					t.Errorf("%s does not declare %s", where, code)
				}
			}
			shared, _ := d["components"].(map[string]any)["responses"].(map[string]any)
			for code, r := range responses {
				if name, ok := r.(map[string]any)["$ref"].(string); ok {
					r = shared[strings.TrimPrefix(name, "#/components/responses/")]
				}
				headers, _ := r.(map[string]any)["headers"].(map[string]any)
				if headers["X-Request-Id"] == nil {
					t.Errorf("%s %s does not declare X-Request-Id", where, code)
				}
				if code == "429" && headers["Retry-After"] == nil {
					t.Errorf("%s 429 does not declare Retry-After", where)
				}
				if code == "200" && !signed && headers["RateLimit-Remaining"] == nil {
					t.Errorf("%s 200 does not declare RateLimit-Remaining", where)
				}
			}
			for _, p := range asSlice(op["parameters"]) {
				p := p.(map[string]any)
				s := p["schema"].(map[string]any)
				switch p["name"] {
				case "page":
					if s["minimum"] != float64(1) {
						t.Errorf("%s page has no minimum 1: %v", where, s)
					}
				case "per_page":
					if s["minimum"] != float64(1) || (s["maximum"] != float64(100) && s["maximum"] != float64(200)) {
						t.Errorf("%s per_page bounds: %v", where, s)
					}
				case "eventId", "notification":
					if s["format"] != "uuid" {
						t.Errorf("%s %s is not format uuid", where, p["name"])
					}
				}
			}
		}
	}
	webhooks, _ := d["webhooks"].(map[string]any)
	for _, event := range []string{"call.ended", "voicemail.received", "transcript.ready", "test"} {
		if webhooks[event] == nil {
			t.Errorf("the webhooks section lacks %s", event)
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestCommittedOpenAPIIsCurrent: api/openapi/v1.json (the clients' source) is current; the
// end-to-end test in internal/serve checks the running service serves it. make generate rewrites it.
func TestCommittedOpenAPIIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("../api/openapi/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	built, err := apiserver.PublishedOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(committed), bytes.TrimSpace(built)) {
		t.Fatal("api/openapi/v1.json is stale: run make generate")
	}
}
