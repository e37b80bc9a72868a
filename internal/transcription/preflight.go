package transcription

import "github.com/switchboard-dev/switchboard/internal/store"

// Step is what a TranscriptionJob does next, as the database shows its work.
type Step int

const (
	// StepProceed: run the job's current phase.
	StepProceed Step = iota
	// StepInvalid: the charge does not exist (any more) or is not the job's account's and
	// call's; the job fails as InvalidSpec without touching any money.
	StepInvalid
	// StepRefunded: the charge was refunded elsewhere; the job fails without a second refund.
	StepRefunded
	// StepCompleted: transcript and summary are settled; the job completes.
	StepCompleted
	// StepSummarize: the transcript is stored (a status update was lost); go on to the summary.
	StepSummarize
	// StepRecordingMissing: the recording was deleted before it was transcribed; refund.
	StepRecordingMissing
)

// JobRef is what a job says about its work: the charge it names, whose account and call,
// and whether it is already summarizing.
type JobRef struct {
	AccountID    string
	CallPublicID string
	Summarizing  bool
}

// Preflight is the one check every phase of a TranscriptionJob makes before it works:
// found is false when the charge does not exist. A job that is summarizing does not need the
// recording any more, so a deleted recording stops only the earlier phases.
func Preflight(work store.TranscriptionWork, found bool, job JobRef) Step {
	switch {
	case !found, work.Charge.AccountPublicID != job.AccountID, work.Charge.CallPublicID != job.CallPublicID:
		return StepInvalid
	case work.Charge.Status == store.ChargeRefunded:
		return StepRefunded
	case work.TranscriptStatus == "completed" && work.SummaryStatus != "pending" && work.SummaryStatus != "processing":
		return StepCompleted
	case work.TranscriptStatus == "completed" && !job.Summarizing:
		return StepSummarize
	case work.RecordingDeleted && !job.Summarizing:
		return StepRecordingMissing
	}
	return StepProceed
}
