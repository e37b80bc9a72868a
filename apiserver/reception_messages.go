package apiserver

import (
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of GET /reception-messages (spec: Limits, slips default 20).
const (
	slipsMaxPerPage = 100
	slipsPerPage    = 20
)

// MessageSlipPage is GET /reception-messages (a named type, so the description names its schema).
type MessageSlipPage struct {
	Page[MessageSlip]
}

var (
	slipSentiments = []string{"positive", "neutral", "negative"}
	slipUrgencies  = []string{"low", "normal", "high"}
)

type receptionMessagesResource struct{ *Server }

func (r receptionMessagesResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/reception-messages").Produces(restful.MIME_JSON)
	params := []*restful.Parameter{
		ws.QueryParameter("search", "Part of the caller's number as international digits (e.g. 4420794).").DataType("string"),
	}
	params = append(params, periodParams(ws, "all")...)
	params = append(params,
		enumParam(ws, "status", "unheard or heard.", "unheard", "heard"),
		enumParam(ws, "sentiment", "Summary sentiment.", slipSentiments...),
		enumParam(ws, "urgency", "Summary urgency.", slipUrgencies...))
	params = append(params, pageParams(ws, slipsMaxPerPage, slipsPerPage)...)
	ws.Route(protect(inboxParams(ws.GET("").To(r.list).Operation("listReceptionMessages").
		Doc("Message slips left with the virtual receptionist, newest first. Recordings play through the recording link operation."),
		params...).
		Returns(http.StatusOK, "OK", MessageSlipPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	c.Add(ws)
}

func (r receptionMessagesResource) list(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	fe := fieldErrors{}
	search := queryText(req, fe, "search")
	window := parsePeriod(req, fe, "all", accountLocation(p.Account.TimeZone), r.cfg.Clock.Now())
	f := store.SlipFilter{
		Search:    search != "",
		Digits:    searchDigits(search),
		From:      window.From,
		To:        window.To,
		Sentiment: queryEnum(req, fe, "sentiment", "", slipSentiments...),
		Urgency:   queryEnum(req, fe, "urgency", "", slipUrgencies...),
	}
	if status := queryEnum(req, fe, "status", "", "unheard", "heard"); status != "" {
		heard := status == "heard"
		f.Heard = &heard
	}
	paging := parsePaging(req, fe, slipsMaxPerPage, slipsPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	list, total, err := r.store.ListMessageSlips(req.Request.Context(), p.Account.ID, f, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, MessageSlipPage{pageOf(r.Server, req, paging, total, convertRows(list, messageSlipAnswer))})
}

// MessageSlip is a message left with the virtual receptionist.
type MessageSlip struct {
	PublicID                 string     `json:"public_id" required:"true"`
	FromE164                 string     `json:"from_e164" required:"true"`
	Department               string     `json:"department" required:"true"`
	ReceivedAt               time.Time  `json:"received_at" required:"true"`
	HeardAt                  *time.Time `json:"heard_at" required:"true"`
	NameRecordingPublicID    *string    `json:"name_recording_public_id" required:"true"`
	MessageRecordingPublicID *string    `json:"message_recording_public_id" required:"true"`
	TranscriptStatus         string     `json:"transcript_status" required:"true"`
	CallerName               string     `json:"caller_name" required:"true"`
	SummaryStatus            string     `json:"summary_status" required:"true"`
	Sentiment                *string    `json:"sentiment" required:"true" enum:"positive,neutral,negative"`
	Urgency                  *string    `json:"urgency" required:"true" enum:"low,normal,high"`
}

// messageSlipAnswer shapes a message slip row as the API answers it.
func messageSlipAnswer(r store.MessageSlip) MessageSlip {
	return MessageSlip{PublicID: r.PublicID, FromE164: r.FromE164, Department: r.Department, ReceivedAt: r.ReceivedAt,
		HeardAt: r.HeardAt, NameRecordingPublicID: r.NameRecordingPublicID,
		MessageRecordingPublicID: r.MessageRecordingPublicID, TranscriptStatus: r.TranscriptStatus, CallerName: r.CallerName,
		SummaryStatus: r.SummaryStatus, Sentiment: r.Sentiment, Urgency: r.Urgency}
}
