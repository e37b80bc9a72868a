package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestReportCallProgress(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	exec := sqlExecutor(t, st)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Progress Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO numbers (account_id, public_id, e164, label) VALUES ($1, 'num_progress', '+442070000101', 'Front desk')`, acct.ID)
	now := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	var seen []store.ProgressCall
	report := func(to, state string) (string, bool, error) {
		return st.ReportCallProgress(ctx, store.CallProgressReport{To: to, PlatformRef: "p-1", State: state, CreatedAt: now,
			Body: func(c store.ProgressCall) (json.RawMessage, error) {
				seen = append(seen, c)
				return json.RawMessage(`{}`), nil
			}})
	}

	if _, _, err := report("+442070000999", "ringing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a number nobody has: %v, want ErrNotFound", err)
	}
	ringing, dup, err := report("+442070000101", "ringing")
	if err != nil || dup || ringing == "" {
		t.Fatalf("ringing: %q %v %v", ringing, dup, err)
	}
	if len(seen) != 1 || seen[0].AccountName != "Progress Ltd" || seen[0].Number.Label != "Front desk" || seen[0].CallPublicID != ringing {
		t.Fatalf("the event was built from %+v", seen)
	}
	again, dup, err := report("+442070000101", "ringing")
	if err != nil || !dup || again != ringing || len(seen) != 1 {
		t.Fatalf("a repeated ringing report: %q %v %v, %d events built", again, dup, err, len(seen))
	}
	answered, dup, err := report("+442070000101", "answered")
	if err != nil || dup || answered != ringing {
		t.Fatalf("answered: %q %v %v, want the ringing call's id %q", answered, dup, err, ringing)
	}
	exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, disposition, started_at, platform_ref)
		VALUES ($1, $2, '+447700900123', '+442070000101', 'answered', $3, 'p-1')`, acct.ID, ringing, now)
	if _, _, err := report("+442070000101", "answered"); !errors.Is(err, store.ErrCallAlreadyReported) {
		t.Fatalf("progress after the final report: %v, want ErrCallAlreadyReported", err)
	}
}
