package apiserver

import (
	"encoding/json"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
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

// ForwardTarget is where a forwarding route rings.
type ForwardTarget struct {
	Kind        string `json:"kind"`
	E164        string `json:"e164"`
	StaffLabel  string `json:"staff_label"`
	RingSeconds int    `json:"ring_seconds"`
}

// IVR is a route's menu; option items are kept as the platform sends them.
type IVR struct {
	Options []json.RawMessage `json:"options"`
}

// Route is how a number answers.
type Route struct {
	Mode              string          `json:"mode" enum:"forward,voicemail,ivr,receptionist"`
	RecordingEnabled  bool            `json:"recording_enabled"`
	VoicemailFallback bool            `json:"voicemail_fallback"`
	Whisper           bool            `json:"whisper"`
	AICover           string          `json:"ai_cover"`
	ForwardTargets    []ForwardTarget `json:"forward_targets"`
	IVR               IVR             `json:"ivr"`
}

// Window is a weekly time window; days are 0 (Sunday) to 6.
type Window struct {
	Days  []int  `json:"days"`
	Start string `json:"start" pattern:"^[0-2][0-9]:[0-5][0-9]$"`
	End   string `json:"end" pattern:"^[0-2][0-9]:[0-5][0-9]$"`
}

// ScheduledRoute is a route that applies in its windows; the first matching window wins.
type ScheduledRoute struct {
	Route
	Name    string   `json:"name"`
	Windows []Window `json:"windows"`
}

// OverrideRoute is a temporary route that replaces the others until it ends.
type OverrideRoute struct {
	Route
	Until *time.Time `json:"until"`
}

// RoutingNumber is the number part of GET /numbers/{number}/routing.
type RoutingNumber struct {
	PublicID                      string `json:"public_id"`
	E164                          string `json:"e164"`
	Status                        string `json:"status" enum:"assigned,porting,releasing,released"`
	VoicemailTranscriptionEnabled bool   `json:"voicemail_transcription_enabled"`
	CallTranscriptionEnabled      bool   `json:"call_transcription_enabled"`
	PrivacyModeEnabled            bool   `json:"privacy_mode_enabled"`
}

// Routing is GET /numbers/{number}/routing.
type Routing struct {
	Number    RoutingNumber    `json:"number"`
	Default   *Route           `json:"default" nullable:"true"`
	Schedules []ScheduledRoute `json:"schedules"`
	Override  *OverrideRoute   `json:"override" nullable:"true"`
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
		Returns(http.StatusOK, "OK", Routing{}).
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
	r.respond(req, resp, "number", routingAnswer(rt), err)
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

func routingAnswer(r store.NumberRouting) Routing {
	n := r.Number
	out := Routing{
		Number: RoutingNumber{PublicID: n.PublicID, E164: n.E164, Status: n.Status,
			VoicemailTranscriptionEnabled: n.VoicemailTranscriptionEnabled,
			CallTranscriptionEnabled:      n.CallTranscriptionEnabled, PrivacyModeEnabled: n.PrivacyModeEnabled},
		Schedules: []ScheduledRoute{},
	}
	for _, rt := range r.Routes {
		route := routeAnswer(rt.Settings)
		switch rt.Kind {
		case store.RouteDefault:
			out.Default = &route
		case store.RouteSchedule:
			windows := make([]Window, 0, len(rt.Windows))
			for _, w := range rt.Windows {
				windows = append(windows, Window(w))
			}
			out.Schedules = append(out.Schedules, ScheduledRoute{Route: route, Name: rt.Name, Windows: windows})
		case store.RouteOverride:
			out.Override = &OverrideRoute{Route: route, Until: rt.Until}
		}
	}
	return out
}

func routeAnswer(s store.RouteSettings) Route {
	targets := make([]ForwardTarget, 0, len(s.ForwardTargets))
	for _, t := range s.ForwardTargets {
		targets = append(targets, ForwardTarget(t))
	}
	options := s.IVROptions
	if options == nil {
		options = []json.RawMessage{}
	}
	return Route{Mode: s.Mode, RecordingEnabled: s.RecordingEnabled, VoicemailFallback: s.VoicemailFallback,
		Whisper: s.Whisper, AICover: s.AICover, ForwardTargets: targets, IVR: IVR{Options: options}}
}
