package apiserver

import (
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// CallPage is GET /calls.
type CallPage struct {
	Page[Call]
}

// Paging of GET /calls (spec: Paging parameters).
const (
	callsMaxPerPage     = 100
	callsDefaultPerPage = 25
)

var (
	callActivities = store.CallActivities
	callSentiments = store.CallSentiments
	callUrgencies  = store.CallUrgencies
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
		Returns(http.StatusOK, "OK", Call{}).
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
		SearchDigits: store.CallSearchDigits(search),
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
	writeJSON(resp, http.StatusOK, CallPage{pageOf(r.Server, req, paging, total, convertRows(calls, callAnswer))})
}

func (r callsResource) get(req *restful.Request, resp *restful.Response) {
	call, err := r.store.GetCall(req.Request.Context(), principal(req).Account.ID, req.PathParameter("call"))
	r.respond(req, resp, "call", callAnswer(call), err)
}

// CallTranscript is the transcript and AI summary of a call, as a call row shows it.
type CallTranscript struct {
	Status         string   `json:"status" required:"true" enum:"pending,processing,completed,failed"`
	SummaryStatus  string   `json:"summary_status" required:"true" enum:"pending,processing,completed,failed,unavailable"`
	Summary        *string  `json:"summary" required:"true"`
	Intent         *string  `json:"intent" required:"true"`
	Sentiment      *string  `json:"sentiment" required:"true" enum:"positive,neutral,negative"`
	Urgency        *string  `json:"urgency" required:"true" enum:"low,normal,high"`
	ActionItems    []string `json:"action_items" required:"true" nullable:"false"`
	CallbackNumber *string  `json:"callback_number" required:"true"`
}

// Call is a row of GET /calls and the body of GET /calls/{call}.
type Call struct {
	PublicID              string    `json:"public_id" required:"true"`
	From                  string    `json:"from" required:"true"`
	CallerDisplayName     string    `json:"caller_display_name" required:"true"`
	To                    string    `json:"to" required:"true"`
	ToName                string    `json:"to_name" required:"true"`
	Direction             string    `json:"direction" required:"true" enum:"inbound,outbound"`
	Disposition           string    `json:"disposition" required:"true" enum:"answered,no-answer,voicemail,failed,in-progress,busy,blocked"`
	StartedAt             time.Time `json:"started_at" required:"true"`
	ForwardSeconds        int       `json:"forward_seconds" required:"true"`
	TotalRatedAmountPence int64     `json:"total_rated_amount_pence" required:"true"`
	// RecordingPublicID is the call's recording (kind call or voicemail, not deleted); null without one.
	RecordingPublicID *string `json:"recording_public_id" required:"true"`
	// Transcript is null until the call's recording has a transcript.
	Transcript *CallTranscript `json:"transcript" required:"true" nullable:"true"`
}

// callAnswer shapes a call row as the API answers it.
func callAnswer(c store.Call) Call {
	answer := Call{PublicID: c.PublicID, From: c.From, CallerDisplayName: c.CallerDisplayName, To: c.To, ToName: c.ToName,
		Direction: c.Direction, Disposition: c.Disposition, StartedAt: c.StartedAt, ForwardSeconds: c.ForwardSeconds,
		TotalRatedAmountPence: c.TotalRatedAmountPence, RecordingPublicID: c.RecordingPublicID}
	if c.Transcript != nil {
		t := CallTranscript(*c.Transcript)
		answer.Transcript = &t
	}
	return answer
}
