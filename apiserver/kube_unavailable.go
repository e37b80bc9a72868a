package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/kubeapi"
)

// kubeRetryAfterSeconds is the Retry-After of a 503 for kube-apiserver being unavailable:
// a blip (an apiserver restart, a leader change of etcd) is over in seconds.
const kubeRetryAfterSeconds = "5"

// kubeUnavailable answers 503 {message} with Retry-After when err means kube-apiserver
// could not answer in time (webhook routes keep their state there), and reports whether
// it did. Anything else is left to the caller.
func (s *Server) kubeUnavailable(req *restful.Request, resp *restful.Response, err error) bool {
	if !kubeapi.Unavailable(err) {
		return false
	}
	s.cfg.Log.Info("a backing service is unavailable", "method", req.Request.Method, "path", req.Request.URL.Path, "error", err.Error())
	resp.Header().Set("Retry-After", kubeRetryAfterSeconds)
	writeError(resp, http.StatusServiceUnavailable, "This service is temporarily unavailable. Please try again shortly.")
	return true
}
