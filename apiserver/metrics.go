package apiserver

import (
	"strings"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// recordMetrics counts every request by route template (never the raw path: it holds ids),
// method and status, and times it. It runs first, so 401s and 429s are counted too.
func (s *Server) recordMetrics(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	start := s.cfg.Clock.Now()
	chain.ProcessFilter(req, resp)
	// A web service's own path is a route "" that go-restful writes with a trailing slash.
	route := strings.TrimSuffix(req.SelectedRoutePath(), "/")
	metrics.APIRequest(route, req.Request.Method, resp.StatusCode(), s.cfg.Clock.Since(start))
}

// webhookLimitNames are the metric labels of the webhook routes' own limits.
var webhookLimitNames = map[string]string{
	endpoints.OpAdd:     metrics.LimitWebhookAdd,
	endpoints.OpTest:    metrics.LimitWebhookTest,
	endpoints.OpResend:  metrics.LimitWebhookResend,
	endpoints.OpRecover: metrics.LimitWebhookRecover,
}
