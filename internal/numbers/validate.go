package numbers

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Limits on what the platform may send; beyond them a request is a 422.
const (
	maxText           = 200
	maxSchedules      = 20
	maxWindows        = 20
	maxForwardTargets = 20
	maxIVROptions     = 20
	maxRingSeconds    = 300
)

// Problems are field errors, answered as 422 {message, errors}.
type Problems map[string][]string

func (p Problems) add(field, format string, args ...any) {
	p[field] = append(p[field], fmt.Sprintf(format, args...))
}

// InvalidError carries the problems of a request (422).
type InvalidError struct{ Problems Problems }

func (e *InvalidError) Error() string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(e.Problems)) {
		parts = append(parts, f+" "+strings.Join(e.Problems[f], "; "))
	}
	return "invalid: " + strings.Join(parts, ", ")
}

func (p Problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidError{Problems: p}
}

// Settings are changes to a number's settings; nil fields stay as they are (or take their
// defaults on a new number).
type Settings struct {
	Label                         *string `json:"label"`
	BusinessProfile               *string `json:"business_profile"`
	SMSCapable                    *bool   `json:"sms_capable"`
	SMSReady                      *bool   `json:"sms_ready"`
	CLIEligible                   *bool   `json:"cli_eligible"`
	CLIVerified                   *bool   `json:"cli_verified"`
	IsDefaultCallerID             *bool   `json:"is_default_caller_id"`
	ForwardCLIMode                *string `json:"forward_cli_mode"`
	PlatformE164                  *string `json:"platform_e164"`
	VoicemailTranscriptionEnabled *bool   `json:"voicemail_transcription_enabled"`
	CallTranscriptionEnabled      *bool   `json:"call_transcription_enabled"`
	PrivacyModeEnabled            *bool   `json:"privacy_mode_enabled"`
}

// Defaults are the settings of a new number before the request's own.
var Defaults = store.NumberSettings{ForwardCLIMode: "caller", VoicemailTranscriptionEnabled: true}

var forwardCLIModes = []string{"caller", "own", "platform"}

// Apply returns cur with the settings changed, normalised, or the problems found. A platform
// E.164 of "" clears it.
func (s Settings) Apply(cur store.NumberSettings) (store.NumberSettings, error) {
	p := Problems{}
	out := cur
	text := func(field string, v *string, dst *string) {
		if v == nil {
			return
		}
		t := strings.TrimSpace(*v)
		if len([]rune(t)) > maxText {
			p.add(field, "must be at most %d characters", maxText)
		}
		*dst = t
	}
	text("label", s.Label, &out.Label)
	text("business_profile", s.BusinessProfile, &out.BusinessProfile)
	for _, f := range []struct{ v, dst *bool }{{s.SMSCapable, &out.SMSCapable}, {s.SMSReady, &out.SMSReady},
		{s.CLIEligible, &out.CLIEligible}, {s.CLIVerified, &out.CLIVerified}, {s.IsDefaultCallerID, &out.IsDefaultCallerID},
		{s.VoicemailTranscriptionEnabled, &out.VoicemailTranscriptionEnabled},
		{s.CallTranscriptionEnabled, &out.CallTranscriptionEnabled}, {s.PrivacyModeEnabled, &out.PrivacyModeEnabled}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if s.ForwardCLIMode != nil {
		if !slices.Contains(forwardCLIModes, *s.ForwardCLIMode) {
			p.add("forward_cli_mode", "must be one of %s", strings.Join(forwardCLIModes, ", "))
		}
		out.ForwardCLIMode = *s.ForwardCLIMode
	}
	if s.PlatformE164 != nil {
		if strings.TrimSpace(*s.PlatformE164) == "" {
			out.PlatformE164 = nil
		} else if e164, ok := phone.ToE164(*s.PlatformE164); ok {
			out.PlatformE164 = &e164
		} else {
			p.add("platform_e164", "must be a phone number")
		}
	}
	if out.SMSReady && !out.SMSCapable {
		p.add("sms_ready", "needs sms_capable")
	}
	if out.ForwardCLIMode == "platform" && out.PlatformE164 == nil {
		p.add("platform_e164", "is required when forward_cli_mode is platform")
	}
	if out.ForwardCLIMode == "own" && !out.CLIVerified {
		p.add("forward_cli_mode", "own needs cli_verified")
	}
	if err := p.err(); err != nil {
		return cur, err
	}
	return out, nil
}

var (
	routeModes = []string{"forward", "voicemail", "ivr", "receptionist"}
	token      = regexp.MustCompile(`^[a-z][a-z0-9-]{0,49}$`)
	clockTime  = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
)

// Routes checks routing and turns it into the routes to store, normalised (forward targets in
// E.164, ai_cover "off" when empty), or the problems found.
func (r Routing) Routes() ([]store.NumberRoute, error) {
	p := Problems{}
	var out []store.NumberRoute
	if r.Default == nil {
		p.add("default", "is required")
	} else {
		out = append(out, store.NumberRoute{Kind: store.RouteDefault, Settings: storedRoute(checkRoute(p, "default", *r.Default))})
	}
	if len(r.Schedules) > maxSchedules {
		p.add("schedules", "must be at most %d", maxSchedules)
	}
	for i, s := range r.Schedules {
		field := fmt.Sprintf("schedules[%d]", i)
		name := strings.TrimSpace(s.Name)
		if name == "" || len([]rune(name)) > maxText {
			p.add(field+".name", "must be 1 to %d characters", maxText)
		}
		if len(s.Windows) == 0 || len(s.Windows) > maxWindows {
			p.add(field+".windows", "must hold 1 to %d windows", maxWindows)
		}
		for j, w := range s.Windows {
			checkWindow(p, fmt.Sprintf("%s.windows[%d]", field, j), w)
		}
		out = append(out, store.NumberRoute{Kind: store.RouteSchedule, Name: name, Windows: storedWindows(s.Windows),
			Settings: storedRoute(checkRoute(p, field, s.Route))})
	}
	if o := r.Override; o != nil {
		var until *time.Time
		if o.Until != nil {
			until = ptr(o.Until.UTC())
		}
		out = append(out, store.NumberRoute{Kind: store.RouteOverride, Until: until, Settings: storedRoute(checkRoute(p, "override", o.Route))})
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func checkWindow(p Problems, field string, w Window) {
	if len(w.Days) == 0 || len(w.Days) > 7 {
		p.add(field+".days", "must hold 1 to 7 days")
	}
	seen := map[int]bool{}
	for _, d := range w.Days {
		if d < 0 || d > 6 || seen[d] {
			p.add(field+".days", "must be distinct days from 0 (Sunday) to 6")
			break
		}
		seen[d] = true
	}
	if !clockTime.MatchString(w.Start) {
		p.add(field+".start", "must be a time HH:MM from 00:00 to 23:59")
	}
	if !clockTime.MatchString(w.End) {
		p.add(field+".end", "must be a time HH:MM from 00:00 to 23:59")
	}
	if w.Start == w.End {
		p.add(field+".end", "must differ from start")
	}
}

func checkRoute(p Problems, field string, r Route) Route {
	if !slices.Contains(routeModes, r.Mode) {
		p.add(field+".mode", "must be one of %s", strings.Join(routeModes, ", "))
	}
	if r.AICover == "" {
		r.AICover = "off"
	} else if !token.MatchString(r.AICover) {
		p.add(field+".ai_cover", "must be a lower-case word such as off")
	}
	if len(r.ForwardTargets) > maxForwardTargets {
		p.add(field+".forward_targets", "must be at most %d", maxForwardTargets)
	}
	if r.Mode == "forward" && len(r.ForwardTargets) == 0 {
		p.add(field+".forward_targets", "must hold a target when mode is forward")
	}
	targets := make([]ForwardTarget, 0, len(r.ForwardTargets))
	for i, t := range r.ForwardTargets {
		tf := fmt.Sprintf("%s.forward_targets[%d]", field, i)
		if !token.MatchString(t.Kind) {
			p.add(tf+".kind", "must be a lower-case word such as pstn or staff")
		}
		if e164, ok := phone.ToE164(t.E164); ok {
			t.E164 = e164
		} else {
			p.add(tf+".e164", "must be a phone number")
		}
		t.StaffLabel = strings.TrimSpace(t.StaffLabel)
		if len([]rune(t.StaffLabel)) > maxText {
			p.add(tf+".staff_label", "must be at most %d characters", maxText)
		}
		if t.RingSeconds < 1 || t.RingSeconds > maxRingSeconds {
			p.add(tf+".ring_seconds", "must be 1 to %d", maxRingSeconds)
		}
		targets = append(targets, t)
	}
	r.ForwardTargets = targets
	if len(r.IVR.Options) > maxIVROptions {
		p.add(field+".ivr.options", "must be at most %d", maxIVROptions)
	}
	for i, o := range r.IVR.Options {
		var obj map[string]json.RawMessage
		if json.Unmarshal(o, &obj) != nil || obj == nil {
			p.add(fmt.Sprintf("%s.ivr.options[%d]", field, i), "must be an object")
		}
	}
	if r.Mode == "ivr" && len(r.IVR.Options) == 0 {
		p.add(field+".ivr.options", "must hold an option when mode is ivr")
	}
	return r
}
