package apiserver

import (
	"errors"
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// TranscribeAccepted is the 202 of POST /calls/{call}/transcribe: the call's transcript and
// summary statuses after the request (pending for a transcription just started).
type TranscribeAccepted struct {
	CallPublicID  string `json:"call_public_id" required:"true"`
	Status        string `json:"status" required:"true" enum:"pending,processing,completed,failed"`
	SummaryStatus string `json:"summary_status" required:"true" enum:"pending,processing,completed,failed,unavailable"`
}

// TranscribePaymentRequired is the 402 of POST /calls/{call}/transcribe.
type TranscribePaymentRequired struct {
	Message  string             `json:"message" required:"true"`
	Estimate TranscriptEstimate `json:"estimate" required:"true"`
}

// transcribeRoute is POST /calls/{call}/transcribe (registered by callsResource).
func (r callsResource) transcribeRoute(ws *restful.WebService, callParam *restful.Parameter) *restful.RouteBuilder {
	return noBodyErrors(r.idempotent(ws.POST("/{call}/transcribe"), r.transcribe).Operation("transcribeCall").Param(callParam).
		Doc("Start a paid transcription and AI summary of the call's recording. Paid from the plan's monthly allowance, "+
			"then prepaid bundle minutes, then the prepaid balance at the account's rate; counts toward the daily spending "+
			"limit. Returns at once; a call already transcribed or pending costs nothing and still answers 202. "+
			"No body (an empty body or any JSON is ignored).").
		Returns(http.StatusAccepted, "Accepted: the transcription is pending (or already exists).", TranscribeAccepted{}).
		Returns(http.StatusPaymentRequired, "The prepaid balance cannot cover it, or it would pass the daily spending limit.", TranscribePaymentRequired{}).
		Returns(http.StatusNotFound, "No such call on this account.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "The call has no recording.", ValidationErrorBody{}))
}

func (r callsResource) transcribe(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	if !readNoBody(req, resp) {
		return
	}
	p := principal(req)
	svc := transcription.Service{Store: r.store, Kube: r.cfg.Kube, Clock: r.cfg.Clock, Log: r.cfg.Log, Queue: r.cfg.TranscriptionJobs}
	res, err := svc.Request(req.Request.Context(), p.User, p.Account, req.PathParameter("call"), claim)
	var refused *transcription.RefusedError
	switch {
	case errors.As(err, &refused):
		writeError(resp, http.StatusForbidden, refused.Message)
		return
	case errors.Is(err, store.ErrNoRecording):
		fe := fieldErrors{}
		fe.add("call", "The call has no recording to transcribe.")
		writeValidation(resp, fe)
		return
	case errors.Is(err, store.ErrTranscriptionUnavailable):
		writeError(resp, http.StatusForbidden, "The account's plan does not include transcription.")
		return
	case err != nil:
		r.respond(req, resp, "call", nil, err)
		return
	}
	if res.Outcome == store.TranscribeRefused {
		writeJSON(resp, http.StatusPaymentRequired, TranscribePaymentRequired{
			Message: billing.RefusalMessage(res.Estimate, res.Price),
			Estimate: TranscriptEstimate{
				Available: true, Minutes: res.Estimate.Minutes, CostPence: res.Estimate.CostPence,
				RatePencePerMin: res.Price.RatePencePerMin, WithinAllowance: res.Estimate.WithinAllowance,
				BundleMinutes: res.Price.BundleMinutes, BalancePence: res.Price.BalancePence,
				Affordable: res.Estimate.Affordable, ExistingStatus: res.ExistingStatus,
			},
		})
		return
	}
	writeJSON(resp, http.StatusAccepted, TranscribeAccepted{CallPublicID: res.CallPublicID, Status: res.Status, SummaryStatus: res.SummaryStatus})
}
