package numbers

import (
	"encoding/json"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// The routing as the platform API reads and writes it, and as the public
// GET /numbers/{number}/routing answers it (ShowRouting). The schema tags are the public
// description's.

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

// Routing is the whole routing of a number as the platform sets it: it replaces what was there.
type Routing struct {
	Default   *Route           `json:"default" nullable:"true"`
	Schedules []ScheduledRoute `json:"schedules"`
	Override  *OverrideRoute   `json:"override" nullable:"true"`
}

// RoutingNumber is the number part of a NumberRouting.
type RoutingNumber struct {
	PublicID                      string `json:"public_id"`
	E164                          string `json:"e164"`
	Status                        string `json:"status" enum:"assigned,porting,releasing,released"`
	VoicemailTranscriptionEnabled bool   `json:"voicemail_transcription_enabled"`
	CallTranscriptionEnabled      bool   `json:"call_transcription_enabled"`
	PrivacyModeEnabled            bool   `json:"privacy_mode_enabled"`
}

// NumberRouting is a number's routing as it stands, with the number.
type NumberRouting struct {
	Number RoutingNumber `json:"number"`
	Routing
}

// ShowRouting shapes a number's stored routes as both the platform API and the public API
// answer them.
func ShowRouting(r store.NumberRouting) NumberRouting {
	n := r.Number
	out := NumberRouting{
		Number: RoutingNumber{PublicID: n.PublicID, E164: n.E164, Status: n.Status,
			VoicemailTranscriptionEnabled: n.VoicemailTranscriptionEnabled,
			CallTranscriptionEnabled:      n.CallTranscriptionEnabled, PrivacyModeEnabled: n.PrivacyModeEnabled},
		Routing: Routing{Schedules: []ScheduledRoute{}},
	}
	for _, rt := range r.Routes {
		route := showRoute(rt.Settings)
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

func showRoute(s store.RouteSettings) Route {
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

// storedRoute is the inverse of showRoute.
func storedRoute(r Route) store.RouteSettings {
	var targets []store.ForwardTarget
	for _, t := range r.ForwardTargets {
		targets = append(targets, store.ForwardTarget(t))
	}
	return store.RouteSettings{Mode: r.Mode, RecordingEnabled: r.RecordingEnabled, VoicemailFallback: r.VoicemailFallback,
		Whisper: r.Whisper, AICover: r.AICover, ForwardTargets: targets, IVROptions: r.IVR.Options}
}

func storedWindows(ws []Window) []store.Window {
	var out []store.Window
	for _, w := range ws {
		out = append(out, store.Window(w))
	}
	return out
}
