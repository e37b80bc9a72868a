package ingest

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// ProgressReport is the body of POST /platform/v1/call-progress: a call starts ringing or is
// answered. Reports are idempotent per platform_ref and state; the live channel announces
// each once (call.ringing, call.answered) and the call's final report keeps the same call id.
type ProgressReport struct {
	PlatformRef string        `json:"platform_ref"`
	State       string        `json:"state"` // ringing or answered
	To          string        `json:"to"`
	From        string        `json:"from"`
	CallerName  string        `json:"caller_name"`
	StartedAt   time.Time     `json:"started_at"`
	Answer      *AnswerReport `json:"answer"`
}

// ProgressReceipt is the answer to a progress report.
type ProgressReceipt struct {
	CallPublicID string `json:"call_public_id"`
	State        string `json:"state"`
	Duplicate    bool   `json:"duplicate"`
}

func (h *Handler) reportProgress(w http.ResponseWriter, r *http.Request) {
	var in ProgressReport
	if !decode(w, r, &in) {
		return
	}
	p := problems{}
	if in.PlatformRef == "" || len(in.PlatformRef) > 200 {
		p.add("platform_ref", "is required, at most 200 characters")
	}
	if in.State != "ringing" && in.State != "answered" {
		p.add("state", "must be ringing or answered")
	}
	to, from := p.phoneNumbers(in.To, in.From)
	p.requireTime("started_at", in.StartedAt)
	if len(in.CallerName) > 200 {
		p.add("caller_name", "must be at most 200 characters")
	}
	if p.answered(w) {
		return
	}
	now := h.cfg.Clock.Now()
	receipt := ProgressReceipt{State: in.State}
	var err error
	receipt.CallPublicID, receipt.Duplicate, err = h.store.ReportCallProgress(r.Context(), store.CallProgressReport{
		To: to, PlatformRef: in.PlatformRef, State: in.State, CreatedAt: now,
		Body: func(c store.ProgressCall) (json.RawMessage, error) {
			progress := events.Progress{CallPublicID: c.CallPublicID, AccountName: c.AccountName, From: from, To: to, StartedAt: in.StartedAt,
				Number: events.PayloadNumber{E164: c.Number.E164, Label: c.Number.Label}}
			if a := in.Answer; a != nil && in.State == "answered" {
				progress.Answer = events.PayloadAnswer{StaffMember: a.StaffMember, Department: a.Department, TargetType: a.TargetType, TargetLabel: a.TargetLabel}
			}
			return events.ForProgress(h.cfg.Links, "call."+in.State, progress, now)
		}})
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No live number " + to + "."})
	case errors.Is(err, store.ErrCallAlreadyReported):
		writeJSON(w, http.StatusConflict, map[string]string{"message": "The call " + in.PlatformRef + " has already been reported as ended."})
	case err != nil:
		h.internalError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, receipt)
	}
}
