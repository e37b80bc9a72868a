package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// unavailableRetryAfter is the Retry-After of a 503: about how long a PostgreSQL restart or
// failover takes to accept connections again.
const unavailableRetryAfter = 2

// writeUnavailable answers 503 {message} with Retry-After: the request was fine, a service
// it needs is not reachable right now.
func writeUnavailable(resp *restful.Response) {
	resp.Header().Set("Retry-After", strconv.Itoa(unavailableRetryAfter))
	writeError(resp, http.StatusServiceUnavailable, "The service is briefly unavailable. Please try again in a few seconds.")
}

// serviceUnavailable answers a request that failed for want of a service it needs (see
// isUnavailable). On a read (GET) the first such failure is held back instead, so
// retryUnavailableRead runs the read once more (on a fresh database connection).
func (s *Server) serviceUnavailable(req *restful.Request, resp *restful.Response, err error) {
	// Only a lost connection is worth a second run: a call that waited out its deadline (to
	// kube-apiserver above all) is answered within it, not twice as late.
	if retry, ok := req.Attribute(attrReadRetry).(*readRetry); ok && !retry.done && resp.ContentLength() == 0 &&
		store.IsUnavailable(err) && !errors.Is(err, context.DeadlineExceeded) {
		retry.err = err
		return
	}
	s.cfg.Log.Info("answered 503: a service the request needs is unavailable", "method", req.Request.Method, "path", req.Request.URL.Path, "error", err.Error())
	writeUnavailable(resp)
}

const attrReadRetry = "switchboard.readRetry"

// readRetry is one GET's retry state: err is the held-back failure of the first run.
type readRetry struct {
	err  error
	done bool
}

// retryUnavailableRead runs a GET operation once more when its first run failed because the
// database connection was lost (store.IsUnavailable). GETs only read, so running one again
// changes nothing; writes are never retried, since their outcome is unknown. protect adds it
// as the last filter, so the chain's target is the operation itself (authentication and
// rate-limit counting are not repeated).
func retryUnavailableRead(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	if req.Request.Method != http.MethodGet {
		chain.ProcessFilter(req, resp)
		return
	}
	retry := &readRetry{}
	req.SetAttribute(attrReadRetry, retry)
	chain.ProcessFilter(req, resp)
	if retry.err == nil {
		return
	}
	retry.done = true
	chain.Target(req, resp)
}

// isUnavailable reports whether err means a service the API needs could not be reached:
// PostgreSQL (store.IsUnavailable) or kube-apiserver, past the deadline every facade call
// to it has (kubeapi.Unavailable).
func isUnavailable(err error) bool {
	return store.IsUnavailable(err) || kubeapi.Unavailable(err)
}
