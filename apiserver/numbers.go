package apiserver

import (
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// NumberSummary is a row of GET /numbers.
type NumberSummary struct {
	PublicID          string `json:"public_id"`
	E164              string `json:"e164"`
	Label             string `json:"label"`
	Status            string `json:"status" enum:"assigned,porting,releasing,released"`
	SMSCapable        bool   `json:"sms_capable"`
	SMSReady          bool   `json:"sms_ready"`
	CLIEligible       bool   `json:"cli_eligible"`
	IsDefaultCallerID bool   `json:"is_default_caller_id"`
}

// NumberList is GET /numbers.
type NumberList struct {
	Data []NumberSummary `json:"data" required:"true"`
}

// BusinessProfileRef names the business profile a number belongs to.
type BusinessProfileRef struct {
	PublicID string `json:"public_id"`
	Name     string `json:"name"`
}

// ForwardCLI says what caller ID forwarded calls show.
type ForwardCLI struct {
	Mode         string  `json:"mode" enum:"caller,own,platform"`
	Shows        string  `json:"shows"`
	OwnE164      string  `json:"own_e164"`
	PlatformE164 *string `json:"platform_e164"`
	OwnAvailable bool    `json:"own_available"`
}

// Number is GET /numbers/{number}.
type Number struct {
	NumberSummary
	Ownership       string              `json:"ownership"`
	BusinessProfile *BusinessProfileRef `json:"business_profile" nullable:"true"`
	ReleaseAt       *time.Time          `json:"release_at"`
	CLIVerified     bool                `json:"cli_verified"`
	ForwardCLI      ForwardCLI          `json:"forward_cli"`
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
		Returns(http.StatusOK, "OK", Number{}).
		Returns(http.StatusNotFound, "No such number on this account.", ErrorBody{}), read))
	ws.Route(protect(ws.GET("/{number}/routing").To(r.routing).Operation("getNumberRouting").Param(numberParam).
		Doc("How the number answers: the default route, schedules and any override. Read-only.").
		Returns(http.StatusOK, "OK", numbers.NumberRouting{}).
		Returns(http.StatusNotFound, "No such number on this account.", ErrorBody{}), read))
	c.Add(ws)
}

func (r numbersResource) list(req *restful.Request, resp *restful.Response) {
	rows, err := r.store.ListNumbers(req.Request.Context(), principal(req).Account.ID)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	list := NumberList{Data: make([]NumberSummary, 0, len(rows))}
	for _, n := range rows {
		list.Data = append(list.Data, numberSummary(n))
	}
	writeJSON(resp, http.StatusOK, list)
}

func (r numbersResource) get(req *restful.Request, resp *restful.Response) {
	n, err := r.store.GetNumber(req.Request.Context(), principal(req).Account.ID, req.PathParameter("number"))
	r.respond(req, resp, "number", numberAnswer(n), err)
}

func (r numbersResource) routing(req *restful.Request, resp *restful.Response) {
	rt, err := r.store.GetRouting(req.Request.Context(), principal(req).Account.ID, req.PathParameter("number"), r.cfg.Clock.Now())
	r.respond(req, resp, "number", numbers.ShowRouting(rt), err)
}

func numberSummary(n store.NumberRow) NumberSummary {
	return NumberSummary{PublicID: n.PublicID, E164: n.E164, Label: n.Label, Status: n.Status, SMSCapable: n.SMSCapable,
		SMSReady: n.SMSReady, CLIEligible: n.CLIEligible, IsDefaultCallerID: n.IsDefaultCallerID}
}

func numberAnswer(n store.NumberDetail) Number {
	out := Number{NumberSummary: numberSummary(n.NumberRow), Ownership: n.Ownership, ReleaseAt: n.ReleaseAt,
		CLIVerified: n.CLIVerified, ForwardCLI: forwardCLI(n)}
	if bp := n.BusinessProfile; bp != nil {
		out.BusinessProfile = &BusinessProfileRef{PublicID: bp.PublicID, Name: bp.Name}
	}
	return out
}

// forwardCLI says what forwarded calls show: the number itself (own), the platform's number
// (platform), or the caller's number.
func forwardCLI(n store.NumberDetail) ForwardCLI {
	out := ForwardCLI{Mode: n.ForwardCLIMode, Shows: "caller", OwnE164: n.E164, PlatformE164: n.PlatformE164,
		OwnAvailable: n.CLIVerified}
	switch n.ForwardCLIMode {
	case "own":
		out.Shows = n.E164
	case "platform":
		out.Shows = ""
		if n.PlatformE164 != nil {
			out.Shows = *n.PlatformE164
		}
	}
	return out
}
