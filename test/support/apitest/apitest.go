// Package apitest drives the v1 API over real HTTP in tests and checks every response
// against the server's own OpenAPI 3.1 description with an independent validator.
package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
)

// TB is the part of testing.TB (and GinkgoT()) used here.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// API is a running server under test.
type API struct {
	BaseURL string // origin, without /v1
	HTTP    *http.Client

	once      sync.Once
	validator validator.Validator
	loadErr   error
}

// New describes a server listening at baseURL.
func New(baseURL string) *API {
	return &API{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// Response is a read response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body.
func (r *Response) JSON(tb TB, dst any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, dst); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as an object.
func (r *Response) Map(tb TB) map[string]any {
	tb.Helper()
	var m map[string]any
	r.JSON(tb, &m)
	return m
}

func (r *Response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// Do sends a request with key (may be empty) and checks the response against the OpenAPI
// description. body may be nil, a string/[]byte sent raw, or a value sent as JSON.
func (a *API) Do(tb TB, key, method, path string, body any) *Response {
	tb.Helper()
	req, resp := a.send(tb, key, method, path, body, nil)
	a.check(tb, req, resp)
	return resp
}

// DoWithHeaders is Do with extra request headers (for example Idempotency-Key, X-Request-Id).
func (a *API) DoWithHeaders(tb TB, key, method, path string, body any, headers http.Header) *Response {
	tb.Helper()
	req, resp := a.send(tb, key, method, path, body, headers)
	a.check(tb, req, resp)
	return resp
}

// DoUncheckedWithHeaders is DoUnchecked with extra request headers.
func (a *API) DoUncheckedWithHeaders(tb TB, key, method, path string, body any, headers http.Header) *Response {
	tb.Helper()
	_, resp := a.send(tb, key, method, path, body, headers)
	return resp
}

// DoUnchecked sends a request without checking the description (for paths outside it).
func (a *API) DoUnchecked(tb TB, key, method, path string, body any) *Response {
	tb.Helper()
	_, resp := a.send(tb, key, method, path, body, nil)
	return resp
}

func (a *API) send(tb TB, key, method, path string, body any, headers http.Header) (*http.Request, *Response) {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			tb.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.BaseURL+path, rd)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for name, values := range headers {
		req.Header[http.CanonicalHeaderKey(name)] = values
	}
	hr, err := a.HTTP.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer hr.Body.Close()
	data, err := io.ReadAll(hr.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return req, &Response{Status: hr.StatusCode, Header: hr.Header, Body: data}
}

func (a *API) check(tb TB, req *http.Request, resp *Response) {
	tb.Helper()
	v, err := a.loadValidator()
	if err != nil {
		tb.Fatalf("load OpenAPI description: %v", err)
	}
	hr := &http.Response{StatusCode: resp.Status, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Body)), Request: req}
	if ok, errs := v.ValidateHttpResponse(req, hr); !ok {
		var msgs []string
		for _, e := range errs {
			msg := e.Message + ": " + e.Reason
			for _, se := range e.SchemaValidationErrors {
				msg += "; " + se.FieldPath + ": " + se.Reason
			}
			msgs = append(msgs, msg)
		}
		tb.Errorf("%s %s answered %d, which does not match the OpenAPI description:\n  %s\nbody: %s",
			req.Method, req.URL.Path, resp.Status, strings.Join(msgs, "\n  "), resp.Body)
	}
}

func (a *API) loadValidator() (validator.Validator, error) {
	a.once.Do(func() {
		resp, err := a.HTTP.Get(a.BaseURL + "/v1/openapi.json")
		if err != nil {
			a.loadErr = err
			return
		}
		defer resp.Body.Close()
		spec, err := io.ReadAll(resp.Body)
		if err != nil {
			a.loadErr = err
			return
		}
		doc, err := libopenapi.NewDocument(spec)
		if err != nil {
			a.loadErr = err
			return
		}
		v, errs := validator.NewValidator(doc, StrictOptions()...)
		if len(errs) > 0 {
			a.loadErr = fmt.Errorf("%v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			a.loadErr = fmt.Errorf("the description itself is invalid: %v", verrs[0].Message)
			return
		}
		a.validator = v
	})
	return a.validator, a.loadErr
}

// StrictOptions are the validator's strictest settings: no undeclared field or header, and
// formats (uuid, date-time, uri, ...) asserted, not just annotated.
func StrictOptions() []config.Option {
	return []config.Option{config.WithStrictMode(), config.WithFormatAssertions(), config.WithContentAssertions(),
		// Maps (additionalProperties) have no declared keys; their values are still checked.
		config.WithStrictIgnorePaths("$.body.errors**", "$.body.by_day**")}
}
