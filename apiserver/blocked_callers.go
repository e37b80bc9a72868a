package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// BlockedCallerList is GET /blocked-callers.
type BlockedCallerList struct {
	Data []store.BlockedCaller `json:"data" required:"true"`
}

type blockedCallersResource struct{ *Server }

func (r blockedCallersResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/blocked-callers").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.list).Operation("listBlockedCallers").
		Doc("All blocked callers, newest first, each saying what its calls get (action) and the number it applies to (null: every number).").
		Returns(http.StatusOK, "OK", BlockedCallerList{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	c.Add(ws)
}

func (r blockedCallersResource) list(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	list, err := r.store.ListBlockedCallers(req.Request.Context(), p.Account.ID, accountLocation(p.Account.TimeZone))
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if list == nil {
		list = []store.BlockedCaller{}
	}
	writeJSON(resp, http.StatusOK, BlockedCallerList{Data: list})
}
