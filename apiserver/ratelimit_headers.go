package apiserver

import (
	"net/http"
	"strconv"
	"time"

	restful "github.com/emicklei/go-restful/v3"
)

// The caller's per-user budget, on every authenticated answer (IETF draft
// "RateLimit header fields for HTTP", the separate-fields form GitHub and others send).
const (
	RateLimitLimitHeader     = "RateLimit-Limit"
	RateLimitRemainingHeader = "RateLimit-Remaining"
	RateLimitResetHeader     = "RateLimit-Reset"
)

// rateLimitBudget is what the headers say: the limit, the requests left in this window after
// this one, and the whole seconds until the window ends.
type rateLimitBudget struct {
	Limit, Remaining, ResetSeconds int
}

// budgetOf is the budget after a request that was the count-th of its user in the window
// starting at window; it uses the same count rateLimit decides the 429 from.
func budgetOf(limit, count int, now, window time.Time) rateLimitBudget {
	remaining := limit - count
	if remaining < 0 {
		remaining = 0
	}
	return rateLimitBudget{Limit: limit, Remaining: remaining, ResetSeconds: retryAfterSeconds(now, window)}
}

func (b rateLimitBudget) setHeaders(h http.Header) {
	h.Set(RateLimitLimitHeader, strconv.Itoa(b.Limit))
	h.Set(RateLimitRemainingHeader, strconv.Itoa(b.Remaining))
	h.Set(RateLimitResetHeader, strconv.Itoa(b.ResetSeconds))
}

// rateLimitHeaders writes the budget authenticate counted onto the answer before anything
// else can write it (the 429 of rateLimit included).
func (s *Server) rateLimitHeaders(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	if hits, ok := req.Attribute(attrUserRequests).(userRequests); ok {
		budgetOf(s.cfg.RequestsPerMinute, hits.count, hits.now, hits.window).setHeaders(resp.Header())
	}
	chain.ProcessFilter(req, resp)
}
