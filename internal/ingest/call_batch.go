package ingest

import (
	"context"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// Call reports are recorded in groups: the reports that arrive while a group's transaction
// runs are recorded together in the next one (group commit), with one statement per table.
// The calls' count triggers, the count rows they lock, the commit and its NOTIFY flush are
// then paid once per group instead of once per report. An idle API records a report at once.

// Defaults of Config.CallBatchSize and Config.CallBatchesAtOnce.
const (
	DefaultCallBatchSize     = 128
	DefaultCallBatchesAtOnce = 2
)

// callJob is a valid call report waiting for its group.
type callJob struct {
	in       CallReport
	to, from string
	// recording is the stored audio's row (nil without a recording).
	recording *store.NewRecording
	now       time.Time
}

// callOutcome is what became of a call report.
type callOutcome struct {
	// found is false when `to` is no live number (404).
	found     bool
	receipt   CallReceipt
	accountID int64
	callID    int64
}

// recordCallGroup records a group of reports in one transaction. When that transaction fails
// for any reason but an unreachable database, each report is recorded alone, so one bad
// report cannot fail the others: each gets its own answer.
func (h *Handler) recordCallGroup(ctx context.Context, jobs []callJob) ([]callOutcome, []error) {
	outs := make([]callOutcome, len(jobs))
	errs := make([]error, len(jobs))
	err := h.recordCalls(ctx, jobs, outs)
	if err == nil {
		return outs, errs
	}
	if len(jobs) == 1 || store.IsUnavailable(err) {
		for i := range errs {
			errs[i] = err
		}
		return outs, errs
	}
	h.cfg.Log.Info("a group of call reports failed; recording them one by one", "reports", len(jobs), "error", err.Error())
	for i := range jobs {
		errs[i] = h.recordCalls(ctx, jobs[i:i+1], outs[i:i+1])
	}
	return outs, errs
}

// recordCalls records jobs in one transaction of two round trips and sets outs[i] for
// jobs[i]: the numbers and the calls' earlier progress read together, then the calls,
// recordings and the events built here from the reports themselves stored and committed
// together (store.CallReports).
func (h *Handler) recordCalls(ctx context.Context, jobs []callJob, outs []callOutcome) error {
	keys := make([]store.CallReportKey, len(jobs))
	for i, j := range jobs {
		keys[i] = store.CallReportKey{ToE164: j.to, PlatformRef: j.in.PlatformRef}
	}
	tx, err := h.store.BeginCallReports(ctx, keys)
	if err != nil {
		return err
	}
	defer tx.Close(ctx)
	reports := make([]store.CallReport, 0, len(jobs))
	reported := make([]int, 0, len(jobs)) // index in jobs of each report
	for i, j := range jobs {
		outs[i] = callOutcome{}
		n, ok := tx.Number(j.to)
		if !ok {
			continue
		}
		outs[i] = callOutcome{found: true, accountID: n.AccountID, receipt: CallReceipt{Events: []string{}}}
		reports = append(reports, storeReport(j, n))
		reported = append(reported, i)
	}
	if len(reports) == 0 {
		return nil
	}
	var evs []events.Event
	var evReport []int // index in reports of each event
	for k, p := range tx.Plan(reports) {
		if p.Duplicate {
			continue
		}
		j := jobs[reported[k]]
		n, _ := tx.Number(j.to)
		built, err := h.callEvents(j, n, p)
		if err != nil {
			return err
		}
		for range built {
			evReport = append(evReport, k)
		}
		evs = append(evs, built...)
	}
	stored, queued, err := tx.Commit(ctx, evs, evReport)
	if err != nil {
		return err
	}
	for k, s := range stored {
		o := &outs[reported[k]]
		o.callID = s.CallID
		o.receipt.CallPublicID, o.receipt.Duplicate = s.CallPublicID, s.Duplicate
		if s.RecordingPublicID != "" {
			o.receipt.RecordingPublicID = &s.RecordingPublicID
		}
	}
	for e, ev := range evs {
		if queued[e] {
			o := &outs[reported[evReport[e]]]
			o.receipt.Events = append(o.receipt.Events, ev.Type)
		}
	}
	return nil
}

// storeReport is the row a valid report stores for number n.
func storeReport(j callJob, n store.LiveNumber) store.CallReport {
	in := j.in
	r := store.CallReport{PlatformRef: in.PlatformRef, Emergency: in.Emergency, Recording: j.recording,
		NewCall: store.NewCall{AccountID: n.AccountID, NumberID: &n.ID, FromE164: j.from, ToE164: j.to, CallerName: in.CallerName,
			Disposition: in.Disposition, Filtered: in.Filtered, StartedAt: in.StartedAt.UTC(), DurationSeconds: in.DurationSeconds,
			TalkSeconds: in.TalkSeconds, ForwardSeconds: in.ForwardSeconds, RatedPence: in.RatedPence}}
	if a := in.Answer; a != nil {
		r.AnsweredBy, r.Department, r.TargetType, r.TargetLabel = a.StaffMember, a.Department, a.TargetType, a.TargetLabel
	}
	return r
}

// callEvents builds the events of a call about to be recorded from the facts in hand: the
// report, its number and account, and the ids the call and its recording will have (its
// internal id is set as the events are stored).
func (h *Handler) callEvents(j callJob, n store.LiveNumber, s store.ReportedCall) ([]events.Event, error) {
	in := j.in
	change := events.CallChange{What: events.CallReported, Disposition: in.Disposition, Emergency: in.Emergency}
	if in.Recording != nil {
		change.RecordingKind = in.Recording.Kind
	}
	types := events.Produced(change)
	if len(types) == 0 {
		return nil, nil
	}
	// As stored: PostgreSQL keeps microseconds.
	started := in.StartedAt.UTC().Truncate(time.Microsecond)
	ended := started.Add(time.Duration(in.DurationSeconds) * time.Second)
	facts := events.CallFacts{AccountID: n.AccountID, CallID: s.CallID, AccountName: n.AccountName,
		Call: events.PayloadCall{ID: s.CallPublicID, Direction: "inbound", From: j.from, To: j.to, StartedAt: started,
			EndedAt: &ended, DurationSeconds: in.DurationSeconds, TalkSeconds: in.TalkSeconds, Disposition: in.Disposition},
		Number:            &events.PayloadNumber{E164: n.E164, Label: n.Label},
		RecordingPublicID: s.RecordingPublicID}
	if a := in.Answer; a != nil {
		facts.Answer = events.PayloadAnswer{StaffMember: a.StaffMember, Department: a.Department, TargetType: a.TargetType, TargetLabel: a.TargetLabel}
	}
	out := make([]events.Event, 0, len(types))
	for _, typ := range types {
		page := ""
		if typ == events.VoicemailReceived {
			page = links.VoicemailPage(strings.TrimRight(h.cfg.Links.APIBaseURL, "/"), h.cfg.LinkSigningKey,
				s.RecordingPublicID, s.RecordingCreated, s.RecordingCreated.Add(n.SharedLinkLifetime))
		}
		ev, err := events.ForCall(h.cfg.Links, typ, facts, page, j.now)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}
