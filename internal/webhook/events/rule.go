package events

// Change is what happened to a call.
type Change int

const (
	// CallReported: the platform reported a call for the first time (a repeated report
	// changes nothing and produces nothing).
	CallReported Change = iota + 1
	// SummaryFinished: the AI summary of one of the call's recordings completed or failed.
	SummaryFinished
)

// CallChange is a change to a call, with the facts that decide its events.
type CallChange struct {
	What Change
	// Disposition of the call (answered, missed, voicemail, blocked, ...).
	Disposition string
	// Emergency calls are never announced.
	Emergency bool
	// RecordingKind is the kind of the recording that came with the report, or whose
	// summary finished ("call", "voicemail"; "" when there is none).
	RecordingKind string
}

// Produced says which events a change produces, in the order they are queued:
//   - a reported call: call.ended unless it was blocked or an emergency call, then
//     voicemail.received when a voicemail came with it;
//   - a finished summary: transcript.ready for a recorded call (a voicemail's summary is
//     announced by nothing: voicemail.received went out when it arrived).
func Produced(c CallChange) []string {
	var out []string
	switch c.What {
	case CallReported:
		if c.Disposition != "blocked" && !c.Emergency {
			out = append(out, CallEnded)
		}
		if c.RecordingKind == "voicemail" {
			out = append(out, VoicemailReceived)
		}
	case SummaryFinished:
		if c.RecordingKind == "call" {
			out = append(out, TranscriptReady)
		}
	}
	return out
}
