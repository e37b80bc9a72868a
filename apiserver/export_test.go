package apiserver

import restful "github.com/emicklei/go-restful/v3"

// RouteRule is one route's access rule, for tests that sweep every route.
type RouteRule struct {
	Method, Path string
	Access       Access
	Protected    bool
}

// RouteRules lists the access rule of every route the container serves.
func RouteRules(c *restful.Container) []RouteRule {
	var out []RouteRule
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			a, ok := r.Metadata[metaAccess].(Access)
			out = append(out, RouteRule{Method: r.Method, Path: r.Path, Access: a, Protected: ok})
		}
	}
	return out
}
