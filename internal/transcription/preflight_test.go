package transcription

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestPreflight(t *testing.T) {
	charge := store.TranscriptionCharge{AccountPublicID: "acc_1", CallPublicID: "call_1", Status: store.ChargeCharged}
	job := JobRef{AccountID: "acc_1", CallPublicID: "call_1"}
	summarizing := JobRef{AccountID: "acc_1", CallPublicID: "call_1", Summarizing: true}
	with := func(mod func(*store.TranscriptionWork)) store.TranscriptionWork {
		w := store.TranscriptionWork{Charge: charge, TranscriptStatus: "pending", SummaryStatus: "pending"}
		mod(&w)
		return w
	}
	same := func(*store.TranscriptionWork) {}
	tests := []struct {
		name  string
		work  store.TranscriptionWork
		found bool
		job   JobRef
		want  Step
	}{
		{"charge missing", store.TranscriptionWork{}, false, job, StepInvalid},
		{"another account's charge", with(func(w *store.TranscriptionWork) { w.Charge.AccountPublicID = "acc_2" }), true, job, StepInvalid},
		{"another call's charge", with(func(w *store.TranscriptionWork) { w.Charge.CallPublicID = "call_2" }), true, job, StepInvalid},
		{"invalid wins over refunded", with(func(w *store.TranscriptionWork) {
			w.Charge.AccountPublicID = "acc_2"
			w.Charge.Status = store.ChargeRefunded
		}), true, job, StepInvalid},
		{"refunded", with(func(w *store.TranscriptionWork) { w.Charge.Status = store.ChargeRefunded }), true, job, StepRefunded},
		{"refunded wins over completed", with(func(w *store.TranscriptionWork) {
			w.Charge.Status = store.ChargeRefunded
			w.TranscriptStatus, w.SummaryStatus = "completed", "completed"
		}), true, job, StepRefunded},
		{"transcript and summary completed", with(func(w *store.TranscriptionWork) { w.TranscriptStatus, w.SummaryStatus = "completed", "completed" }), true, job, StepCompleted},
		{"summary failed counts as settled", with(func(w *store.TranscriptionWork) { w.TranscriptStatus, w.SummaryStatus = "completed", "failed" }), true, summarizing, StepCompleted},
		{"transcript stored, status lost", with(func(w *store.TranscriptionWork) { w.TranscriptStatus, w.SummaryStatus = "completed", "processing" }), true, job, StepSummarize},
		{"transcript stored while summarizing", with(func(w *store.TranscriptionWork) { w.TranscriptStatus, w.SummaryStatus = "completed", "processing" }), true, summarizing, StepProceed},
		{"recording deleted before transcribing", with(func(w *store.TranscriptionWork) { w.RecordingDeleted = true }), true, job, StepRecordingMissing},
		{"recording deleted after transcribing", with(func(w *store.TranscriptionWork) {
			w.RecordingDeleted = true
			w.TranscriptStatus, w.SummaryStatus = "completed", "processing"
		}), true, summarizing, StepProceed},
		{"work to do", with(same), true, job, StepProceed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Preflight(tt.work, tt.found, tt.job); got != tt.want {
				t.Errorf("Preflight = %v, want %v", got, tt.want)
			}
		})
	}
}
