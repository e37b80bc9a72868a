package apiserver

import (
	"net/http"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Analytics windows in days (spec: Limits, "Analytics window").
var analyticsDays = []string{"7", "30", "90"}

const analyticsDefaultDays = "30"

type analyticsResource struct{ *Server }

func (r analyticsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/analytics").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.get).Operation("getAnalytics").
		Doc("Call analytics of the last 7, 30 or 90 calendar days (today included) in the account's time zone. "+
			"Calls screened out by call protection are counted only in summary.filtered; every other count is of business calls. "+
			"missed is no-answer, busy and failed calls; avg_forward_seconds is the mean over answered calls.").
		Param(enumParam(ws, "days", "Window in days: 7, 30 (default) or 90.", analyticsDays...).DataType("integer").DefaultValue(analyticsDefaultDays)).
		Param(ws.QueryParameter("number", "A live number's public_id: only calls to it (by_number still lists every number).").
			DataType("string")).
		Returns(http.StatusOK, "OK", store.Analytics{}).
		Returns(http.StatusNotFound, "number names none of the account's live numbers.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read}))
	c.Add(ws)
}

func (r analyticsResource) get(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	fe := fieldErrors{}
	days, _ := strconv.Atoi(queryEnum(req, fe, "days", analyticsDefaultDays, analyticsDays...))
	// number is an id, not free text: one naming none of the account's live numbers is a 404
	// (spec: Errors), however long; one PostgreSQL cannot hold names none without asking it.
	number := strings.TrimSpace(req.QueryParameter("number"))
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	if !storableText(number) {
		notFound(resp, "number")
		return
	}
	a, err := r.store.CallAnalytics(req.Request.Context(), store.AnalyticsQuery{
		AccountID:      p.Account.ID,
		NumberPublicID: number,
		Days:           days,
		Location:       accountLocation(p.Account.TimeZone),
		Now:            r.cfg.Clock.Now(),
	})
	r.respond(req, resp, "number", a, err)
}
