package portal

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// digits keeps the digits of s.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// callerName is the caller's name worth showing beside their number: none when the network
// gave no name, or gave the number itself as the name.
func callerName(name, number string) string {
	name = strings.TrimSpace(name)
	if name == "" || (digits(name) != "" && digits(name) == digits(number)) {
		return ""
	}
	return name
}

// routeLine words where the call went, from its outcome and who answered it.
func routeLine(disposition string, a store.CallAnswer, forwardSeconds int) string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	staff, dept, target := str(a.StaffMember), str(a.Department), str(a.TargetLabel)
	if target == "" {
		target = str(a.TargetType)
	}
	switch disposition {
	case "answered":
		var b strings.Builder
		b.WriteString("Answered")
		if staff != "" {
			b.WriteString(" by " + staff)
		}
		if dept != "" {
			b.WriteString(" (" + dept + ")")
		}
		if target != "" && target != staff {
			b.WriteString(" on " + target)
		}
		if forwardSeconds > 0 {
			fmt.Fprintf(&b, " after %d s of forwarding", forwardSeconds)
		}
		return b.String() + "."
	case "voicemail":
		return "Not answered; the caller left a voicemail."
	case "no-answer":
		return "Rang without an answer; no message was left."
	case "busy":
		return "The line was busy."
	case "failed":
		return "The call failed before it was connected."
	case "blocked":
		return "Refused: the caller is on the blocked list."
	case "in-progress":
		return "The call is still in progress."
	}
	return disposition
}

// summaryNote says why a call's transcript has no summary to show and what to do about it;
// both are empty when the summary is there. mayTranscribe: the viewer may start a transcription.
func summaryNote(t store.Transcript, mayTranscribe bool) (why, todo string) {
	switch {
	case t.SummaryStatus == "completed":
		return "", ""
	case t.Status == "failed":
		why = "The transcription failed, so there is no summary."
		if t.FailureReason != nil && strings.TrimSpace(*t.FailureReason) != "" {
			why = "The transcription failed: " + strings.TrimSuffix(strings.TrimSpace(*t.FailureReason), ".") + "."
		}
		if mayTranscribe {
			return why, "The charge was refunded. Transcribe the call again below, or listen to the recording."
		}
		return why, "The charge was refunded. Listen to the recording, or ask the owner to transcribe it again."
	case t.Status == "pending" || t.Status == "processing" || t.SummaryStatus == "pending" || t.SummaryStatus == "processing":
		return "The transcript and summary are still being made.", "Reload this page in a minute."
	case t.SummaryStatus == "failed":
		return "The transcript was made, but no summary could be made from it.",
			"Read the transcript below for what the caller wants and a number to ring back; no to-dos were made from this call."
	}
	return "This transcript has no summary.", "Read the transcript below."
}

// clockTime formats seconds into a recording as m:ss.
func clockTime(seconds float64) string {
	s := max(0, int(seconds))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// telHref is a tel: link to number (its digits and a leading +), trusted as a URL because it
// holds nothing else.
func telHref(number string) template.URL {
	d := digits(number)
	if strings.HasPrefix(strings.TrimSpace(number), "+") {
		d = "+" + d
	}
	return template.URL("tel:" + d) //nolint:gosec // only digits and +
}
