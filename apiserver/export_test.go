package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

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

// IdempotentWork is where a route declared idempotent does its work ("store" or "kube"), or
// "" when the route is not declared idempotent.
func IdempotentWork(r restful.Route) string {
	w, _ := r.Metadata[metaIdempotent].(idempotentWork)
	return string(w)
}

// UnclaimedWritePath is the route UnclaimedWrite adds.
const UnclaimedWritePath = APIRoot + "/unclaimed-contacts"

// UnclaimedWrite adds POST /v1/unclaimed-contacts, declared idempotent with its work in the
// store, whose handler saves a contact without handing the claim to the store: the mistake
// the check that idempotent routes commit their claim must catch.
func UnclaimedWrite(s *Server) Resource { return unclaimedWrite{s} }

type unclaimedWrite struct{ *Server }

func (u unclaimedWrite) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(UnclaimedWritePath).Produces(restful.MIME_JSON)
	ws.Route(protect(u.idempotent(ws.POST(""), u.create).Operation("createUnclaimedContact").
		Returns(http.StatusCreated, "The contact as saved.", Contact{}), Access{Permission: auth.ContactsWrite, NeedsIntegrations: true}))
	c.Add(ws)
}

func (u unclaimedWrite) create(req *restful.Request, resp *restful.Response, _ *store.IdempotencyClaim) {
	ct, err := u.store.UpsertContact(req.Request.Context(), principal(req).Account.ID,
		store.ContactInput{Source: "api", DisplayName: "Unclaimed"}, u.cfg.Clock.Now(), nil)
	if err != nil {
		u.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusCreated, contactAnswer(ct))
}
