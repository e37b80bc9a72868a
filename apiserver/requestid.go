package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// RequestIDHeader carries the id of a request on its answer, so a support conversation can
// find the request's log line.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds a caller's request id (Heroku and Stripe use ids of this order).
const maxRequestIDLength = 200

// requestID is the caller's id when it is sane (1 to maxRequestIDLength printable token
// characters, so it cannot forge log fields or headers), else a fresh UUID.
func requestID(callers string) string {
	if saneRequestID(callers) {
		return callers
	}
	return uuid.NewString()
}

// saneRequestID reports whether id is 1 to maxRequestIDLength RFC 9110 token characters.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isTokenChar(id[i]) {
			return false
		}
	}
	return true
}

// isTokenChar is RFC 9110's tchar.
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// withRequestID sets the answer's X-Request-Id for requests outside the container's filters
// (paths outside every web service) and returns it.
func withRequestID(w http.ResponseWriter, r *http.Request) string {
	id := requestID(r.Header.Get(RequestIDHeader))
	w.Header().Set(RequestIDHeader, id)
	return id
}

// logEachRequest gives every answer its X-Request-Id and logs one structured line per
// request: method, route template (never the path, which may hold ids of other records),
// status, duration, the account's public id and the request id. Never headers or bodies:
// they carry keys and secrets.
func (s *Server) logEachRequest(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	start := s.cfg.Clock.Now()
	id := withRequestID(resp, req.Request)
	chain.ProcessFilter(req, resp)
	route := req.SelectedRoutePath()
	if route == "" {
		route = "(no route)"
	}
	account := ""
	if p, ok := req.Attribute(attrPrincipal).(*store.Principal); ok && p != nil {
		account = p.Account.PublicID
	}
	s.cfg.Log.Info("request", "method", req.Request.Method, "route", route, "status", resp.StatusCode(),
		"duration", s.cfg.Clock.Since(start).String(), "account", account, "request_id", id)
}
