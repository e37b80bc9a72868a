package ingest

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/events"
	"github.com/switchboard-dev/switchboard/internal/store"
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
	ctx := r.Context()
	now := h.cfg.Clock.Now()
	var receipt ProgressReceipt
	var found bool
	err := h.store.InTx(ctx, func(tx pgx.Tx) error {
		n, ok, err := h.number(ctx, w, tx, to)
		if !ok {
			return err
		}
		found = true
		var accountName string
		if err := tx.QueryRow(ctx, `SELECT name FROM accounts WHERE id = $1`, n.AccountID).Scan(&accountName); err != nil {
			return err
		}
		progress := events.Progress{AccountName: accountName, From: from, To: to, StartedAt: in.StartedAt,
			Number: events.PayloadNumber{E164: n.E164, Label: n.Label}}
		if a := in.Answer; a != nil && in.State == "answered" {
			progress.Answer = events.PayloadAnswer{StaffMember: a.StaffMember, Department: a.Department, TargetType: a.TargetType, TargetLabel: a.TargetLabel}
		}
		receipt.State = in.State
		receipt.CallPublicID, receipt.Duplicate, err = store.RecordCallProgress(ctx, tx, store.CallProgress{
			AccountID: n.AccountID, PlatformRef: in.PlatformRef, State: in.State, CreatedAt: now,
			Body: func(callPublicID string) (json.RawMessage, error) {
				progress.CallPublicID = callPublicID
				return events.ForProgress(h.cfg.Links, "call."+in.State, progress, now)
			}})
		return err
	})
	switch {
	case errors.Is(err, store.ErrCallAlreadyReported):
		writeJSON(w, http.StatusConflict, map[string]string{"message": "The call " + in.PlatformRef + " has already been reported as ended."})
	case err != nil:
		h.internalError(w, r, err)
	case found:
		writeJSON(w, http.StatusOK, receipt)
	}
}
