package apiserver

import (
	"net/http"
	"strings"
	"unicode"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// CallPage is GET /calls.
type CallPage struct {
	Page[store.Call]
}

// Paging of GET /calls (spec: Paging parameters).
const (
	callsMaxPerPage     = 100
	callsDefaultPerPage = 25
)

var (
	callActivities = []string{"business", "filtered", "all"}
	callSentiments = []string{"positive", "neutral", "negative"}
	callUrgencies  = []string{"low", "normal", "high"}
)

type callsResource struct{ *Server }

func (r callsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/calls").Produces(restful.MIME_JSON)
	callParam := ws.PathParameter("call", "The call's public_id.").DataType("string")
	read := Access{Permission: auth.Read, NeedsIntegrations: true}

	list := ws.GET("").To(r.list).Operation("listCalls").
		Doc("The account's calls, newest first, each with its AI summary once it exists. Paged.").
		Param(enumParam(ws, "activity", "business (default): real calls; filtered: calls screened out by call protection; all: both.",
			callActivities...).DefaultValue("business")).
		Param(ws.QueryParameter("search", "Part of the caller's or dialled number as international digits, or of the caller's name (case-insensitive).").
			DataType("string"))
	for _, p := range periodParams(ws, "all") {
		list.Param(p)
	}
	list.Param(enumParam(ws, "status", "Only calls with this outcome.", store.CallDispositions...)).
		Param(enumParam(ws, "sentiment", "Only calls whose summary has this sentiment.", callSentiments...)).
		Param(enumParam(ws, "urgency", "Only calls whose summary has this urgency.", callUrgencies...))
	for _, p := range pageParams(ws, callsMaxPerPage, callsDefaultPerPage) {
		list.Param(p)
	}
	list.Returns(http.StatusOK, "OK", CallPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{})
	ws.Route(protect(list, read))

	ws.Route(protect(ws.GET("/{call}").To(r.get).Operation("getCall").Param(callParam).
		Doc("One call, in the same shape as a list row.").
		Returns(http.StatusOK, "OK", store.Call{}).
		Returns(http.StatusNotFound, "No such call on this account.", ErrorBody{}), read))

	// POST /{call}/transcribe is registered here too (one web service per root path); see transcribe.go.
	ws.Route(protect(r.transcribeRoute(ws, callParam), Access{Permission: auth.Transcribe, NeedsIntegrations: true}))
	c.Add(ws)
}

// callFilter reads and validates the list's query parameters.
func (r callsResource) callFilter(req *restful.Request, fe fieldErrors) (store.CallFilter, Paging) {
	p := principal(req)
	search := queryText(req, fe, "search")
	window := parsePeriod(req, fe, "all", accountLocation(p.Account.TimeZone), r.cfg.Clock.Now())
	paging := parsePaging(req, fe, callsMaxPerPage, callsDefaultPerPage)
	f := store.CallFilter{
		Activity:     queryEnum(req, fe, "activity", "business", callActivities...),
		Search:       search,
		SearchDigits: callSearchDigits(search),
		From:         window.From,
		To:           window.To,
		Status:       queryEnum(req, fe, "status", "", store.CallDispositions...),
		Sentiment:    queryEnum(req, fe, "sentiment", "", callSentiments...),
		Urgency:      queryEnum(req, fe, "urgency", "", callUrgencies...),
		Limit:        paging.PerPage,
		Offset:       paging.Offset(),
	}
	return f, paging
}

// callSearchDigits is the number part of a call search: its digits when it reads as a phone
// number (digits, spaces, "+" and punctuation), none when it has letters. "Unit 4" is a name;
// matching its "4" against every number would return nearly every call.
func callSearchDigits(q string) string {
	if strings.IndexFunc(q, unicode.IsLetter) >= 0 {
		return ""
	}
	return searchDigits(q)
}

func (r callsResource) list(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	f, paging := r.callFilter(req, fe)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	calls, total, err := r.store.ListCalls(req.Request.Context(), principal(req).Account.ID, f)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, CallPage{pageOf(r.Server, req, paging, total, calls)})
}

func (r callsResource) get(req *restful.Request, resp *restful.Response) {
	call, err := r.store.GetCall(req.Request.Context(), principal(req).Account.ID, req.PathParameter("call"))
	r.respond(req, resp, "call", call, err)
}
