package apitest

import "net/http"

// DoWithHeader is Do with extra request headers (for example Idempotency-Key).
func (a *API) DoWithHeader(tb TB, key, method, path string, body any, header http.Header) *Response {
	tb.Helper()
	req, resp := a.send(tb, key, method, path, body, header)
	a.check(tb, req, resp)
	return resp
}
