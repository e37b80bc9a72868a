package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// NumberList is GET /numbers.
type NumberList struct {
	Data []store.NumberSummary `json:"data" required:"true"`
}

type numbersResource struct{ *Server }

func (r numbersResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/numbers").Produces(restful.MIME_JSON)
	numberParam := ws.PathParameter("number", "The number's public_id.").DataType("string")
	read := Access{Permission: auth.Read}
	ws.Route(protect(ws.GET("").To(r.list).Operation("listNumbers").
		Doc("All numbers not released, ordered by number.").
		Returns(http.StatusOK, "OK", NumberList{}), read))
	ws.Route(protect(ws.GET("/{number}").To(r.get).Operation("getNumber").Param(numberParam).
		Doc("One number.").
		Returns(http.StatusOK, "OK", store.Number{}).
		Returns(http.StatusNotFound, "No such number on this account.", ErrorBody{}), read))
	ws.Route(protect(ws.GET("/{number}/routing").To(r.routing).Operation("getNumberRouting").Param(numberParam).
		Doc("How the number answers: the default route, schedules and any override. Read-only.").
		Returns(http.StatusOK, "OK", store.Routing{}).
		Returns(http.StatusNotFound, "No such number on this account.", ErrorBody{}), read))
	c.Add(ws)
}

func (r numbersResource) list(req *restful.Request, resp *restful.Response) {
	nums, err := r.store.ListNumbers(req.Request.Context(), principal(req).Account.ID)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if nums == nil {
		nums = []store.NumberSummary{}
	}
	writeJSON(resp, http.StatusOK, NumberList{Data: nums})
}

func (r numbersResource) get(req *restful.Request, resp *restful.Response) {
	n, err := r.store.GetNumber(req.Request.Context(), principal(req).Account.ID, req.PathParameter("number"))
	r.respond(req, resp, "number", n, err)
}

func (r numbersResource) routing(req *restful.Request, resp *restful.Response) {
	rt, err := r.store.GetRouting(req.Request.Context(), principal(req).Account.ID, req.PathParameter("number"), r.cfg.Clock.Now())
	r.respond(req, resp, "number", rt, err)
}
