package portal

import (
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func ptr(s string) *string { return &s }

func TestCallerName(t *testing.T) {
	for _, tc := range []struct{ name, number, want string }{
		{"Dana Smith", "+447700900123", "Dana Smith"},
		{"", "+447700900123", ""},
		{"  ", "+447700900123", ""},
		// The network's name is the number itself, written another way: shown once.
		{"+447700900123", "+447700900123", ""},
		{"07700 900123", "+447700900123", "07700 900123"},
		{"447700900123", "+447700900123", ""},
		{"Unit 4", "+447700900123", "Unit 4"},
	} {
		if got := callerName(tc.name, tc.number); got != tc.want {
			t.Errorf("callerName(%q, %q) = %q, want %q", tc.name, tc.number, got, tc.want)
		}
	}
}

func TestRouteLine(t *testing.T) {
	for _, tc := range []struct {
		disposition string
		answer      store.CallAnswer
		forward     int
		want        string
	}{
		{"answered", store.CallAnswer{StaffMember: ptr("Alex"), Department: ptr("Service"), TargetType: ptr("staff"), TargetLabel: ptr("Alex's mobile")}, 12,
			"Answered by Alex (Service) on Alex's mobile after 12 s of forwarding."},
		{"answered", store.CallAnswer{}, 0, "Answered."},
		{"answered", store.CallAnswer{TargetType: ptr("group")}, 0, "Answered on group."},
		{"answered", store.CallAnswer{StaffMember: ptr("Alex"), TargetLabel: ptr("Alex")}, 0, "Answered by Alex."},
		{"voicemail", store.CallAnswer{}, 20, "Not answered; the caller left a voicemail."},
		{"no-answer", store.CallAnswer{}, 0, "Rang without an answer; no message was left."},
		{"blocked", store.CallAnswer{}, 0, "Refused: the caller is on the blocked list."},
		{"something-new", store.CallAnswer{}, 0, "something-new"},
	} {
		if got := routeLine(tc.disposition, tc.answer, tc.forward); got != tc.want {
			t.Errorf("routeLine(%s, %+v, %d) = %q, want %q", tc.disposition, tc.answer, tc.forward, got, tc.want)
		}
	}
}

func TestSummaryNote(t *testing.T) {
	for _, tc := range []struct {
		name          string
		t             store.Transcript
		mayTranscribe bool
		why, todo     string // substrings; empty: the note is empty
	}{
		{"a summary needs no note", store.Transcript{Status: "completed", SummaryStatus: "completed"}, true, "", ""},
		{"a failed transcription gives its reason", store.Transcript{Status: "failed", SummaryStatus: "failed", FailureReason: ptr("No speech was recognised in the recording.")}, true,
			"The transcription failed: No speech was recognised in the recording.", "Transcribe the call again"},
		{"without the allowance, ask the owner", store.Transcript{Status: "failed", SummaryStatus: "failed"}, false,
			"The transcription failed, so there is no summary.", "ask the owner"},
		{"in progress", store.Transcript{Status: "processing", SummaryStatus: "pending"}, true, "still being made", "Reload"},
		{"summary failed after a transcript", store.Transcript{Status: "completed", SummaryStatus: "failed"}, true,
			"no summary could be made", "Read the transcript"},
		{"unavailable", store.Transcript{Status: "completed", SummaryStatus: "unavailable"}, true, "has no summary", "Read the transcript"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, todo := summaryNote(tc.t, tc.mayTranscribe)
			if tc.why == "" {
				if why != "" || todo != "" {
					t.Fatalf("note %q / %q, want none", why, todo)
				}
				return
			}
			if !strings.Contains(why, tc.why) || !strings.Contains(todo, tc.todo) {
				t.Errorf("note %q / %q, want %q / %q", why, todo, tc.why, tc.todo)
			}
		})
	}
}

func TestClockAndTel(t *testing.T) {
	for s, want := range map[float64]string{0: "0:00", 9.7: "0:09", 61: "1:01", 600: "10:00", -3: "0:00"} {
		if got := clockTime(s); got != want {
			t.Errorf("clockTime(%v) = %q, want %q", s, got, want)
		}
	}
	for in, want := range map[string]string{"+44 7700 900123": "tel:+447700900123", "07700900123": "tel:07700900123", `+44"><script>`: "tel:+44"} {
		if got := string(telHref(in)); got != want {
			t.Errorf("telHref(%q) = %q, want %q", in, got, want)
		}
	}
}
