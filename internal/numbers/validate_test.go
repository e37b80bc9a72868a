package numbers

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func problemFields(err error) []string {
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		return nil
	}
	var fields []string
	for f := range invalid.Problems {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	return fields
}

func TestSettingsApply(t *testing.T) {
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	yes := true
	cases := []struct {
		name     string
		cur      store.NumberSettings
		in       Settings
		want     store.NumberSettings
		problems []string
	}{
		{"defaults stay when nothing is sent", Defaults, Settings{}, Defaults, nil},
		{"label trimmed, flags set", Defaults, Settings{Label: s("  Sales "), SMSCapable: b(true), SMSReady: b(true)},
			store.NumberSettings{Label: "Sales", SMSCapable: true, SMSReady: true, ForwardCLIMode: "caller", VoicemailTranscriptionEnabled: true}, nil},
		{"one value shared by several settings sets each", Defaults, Settings{SMSCapable: &yes, SMSReady: &yes, CLIEligible: &yes, CLIVerified: &yes,
			IsDefaultCallerID: &yes, CallTranscriptionEnabled: &yes, PrivacyModeEnabled: &yes},
			store.NumberSettings{SMSCapable: true, SMSReady: true, CLIEligible: true, CLIVerified: true, IsDefaultCallerID: true,
				ForwardCLIMode: "caller", VoicemailTranscriptionEnabled: true, CallTranscriptionEnabled: true, PrivacyModeEnabled: true}, nil},
		{"nil leaves a setting alone", store.NumberSettings{Label: "Main", PrivacyModeEnabled: true, ForwardCLIMode: "caller"},
			Settings{PrivacyModeEnabled: b(false)}, store.NumberSettings{Label: "Main", ForwardCLIMode: "caller"}, nil},
		{"platform caller ID normalised", Defaults, Settings{ForwardCLIMode: s("platform"), PlatformE164: s("020 7946 0999")},
			store.NumberSettings{ForwardCLIMode: "platform", PlatformE164: s("+442079460999"), VoicemailTranscriptionEnabled: true}, nil},
		{"empty platform E.164 clears it", store.NumberSettings{ForwardCLIMode: "caller", PlatformE164: s("+442079460999")},
			Settings{PlatformE164: s("")}, store.NumberSettings{ForwardCLIMode: "caller"}, nil},
		{"platform mode needs a number", Defaults, Settings{ForwardCLIMode: s("platform")}, Defaults, []string{"platform_e164"}},
		{"own mode needs a verified CLI", Defaults, Settings{ForwardCLIMode: s("own")}, Defaults, []string{"forward_cli_mode"}},
		{"unknown mode", Defaults, Settings{ForwardCLIMode: s("mine")}, Defaults, []string{"forward_cli_mode"}},
		{"bad number, long label, sms ready without sms", Defaults,
			Settings{PlatformE164: s("12"), Label: s(strings.Repeat("x", 201)), SMSReady: b(true)}, Defaults,
			[]string{"label", "platform_e164", "sms_ready"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Apply(c.cur)
			if fields := problemFields(err); !slices.Equal(fields, c.problems) {
				t.Fatalf("problems %v (%v), want %v", fields, err, c.problems)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRoutingRoutes(t *testing.T) {
	until := time.Date(2026, 12, 24, 17, 0, 0, 0, time.FixedZone("x", 3600))
	forward := Route{Mode: "forward", RecordingEnabled: true,
		ForwardTargets: []ForwardTarget{{Kind: "pstn", E164: "07700 900900", StaffLabel: " Kim ", RingSeconds: 20}}}
	voicemail := Route{Mode: "voicemail", AICover: "off"}
	weekdays := []Window{{Days: []int{1, 2, 3, 4, 5}, Start: "08:00", End: "18:00"}}

	routes, err := Routing{Default: &voicemail, Schedules: []ScheduledRoute{{Route: forward, Name: " Office ", Windows: weekdays}},
		Override: &OverrideRoute{Route: voicemail, Until: &until}}.Routes()
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 3 || routes[0].Kind != "default" || routes[1].Kind != "schedule" || routes[2].Kind != "override" {
		t.Fatalf("routes %+v", routes)
	}
	target := routes[1].Settings.ForwardTargets[0]
	if target.E164 != "+447700900900" || target.StaffLabel != "Kim" || routes[1].Name != "Office" || routes[0].Settings.AICover != "off" {
		t.Errorf("not normalised: %+v %+v", routes[1], target)
	}
	if forward.ForwardTargets[0].E164 != "07700 900900" {
		t.Error("the request's own targets were changed")
	}
	if !routes[2].Until.Equal(until) || routes[2].Until.Location() != time.UTC {
		t.Errorf("override until %v", routes[2].Until)
	}

	bad := []struct {
		name    string
		routing Routing
		fields  []string
	}{
		{"no default", Routing{}, []string{"default"}},
		{"unknown mode", Routing{Default: &Route{Mode: "ring"}}, []string{"default.mode"}},
		{"forward without targets", Routing{Default: &Route{Mode: "forward"}}, []string{"default.forward_targets"}},
		{"bad target", Routing{Default: &Route{Mode: "forward", ForwardTargets: []ForwardTarget{{Kind: "PSTN!", E164: "nope", RingSeconds: 0}}}},
			[]string{"default.forward_targets[0].e164", "default.forward_targets[0].kind", "default.forward_targets[0].ring_seconds"}},
		{"ivr without options", Routing{Default: &Route{Mode: "ivr"}}, []string{"default.ivr.options"}},
		{"ivr option not an object", Routing{Default: &Route{Mode: "ivr", IVR: IVR{Options: []json.RawMessage{json.RawMessage(`"1"`)}}}},
			[]string{"default.ivr.options[0]"}},
		{"bad schedule", Routing{Default: &voicemail, Schedules: []ScheduledRoute{{Route: voicemail, Windows: []Window{
			{Days: []int{7, 1}, Start: "8:00", End: "24:00"}, {Days: []int{1, 1}, Start: "09:00", End: "09:00"}}}}},
			[]string{"schedules[0].name", "schedules[0].windows[0].days", "schedules[0].windows[0].end", "schedules[0].windows[0].start",
				"schedules[0].windows[1].days", "schedules[0].windows[1].end"}},
		{"schedule without windows", Routing{Default: &voicemail, Schedules: []ScheduledRoute{{Route: voicemail, Name: "x"}}},
			[]string{"schedules[0].windows"}},
		{"bad override", Routing{Default: &voicemail, Override: &OverrideRoute{Route: Route{Mode: "voicemail", AICover: "On"}}},
			[]string{"override.ai_cover"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.routing.Routes()
			if fields := problemFields(err); !slices.Equal(fields, c.fields) {
				t.Errorf("problems %v (%v), want %v", fields, err, c.fields)
			}
		})
	}
}
