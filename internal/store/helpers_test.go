package store_test

import (
	"context"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// sqlExecutor runs statements for a test's set-up and changes, failing the test on error.
func sqlExecutor(t *testing.T, st *store.Store) func(sql string, args ...any) {
	return func(sql string, args ...any) {
		t.Helper()
		if _, err := st.SQL().Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// checkTotalMatchesList fails unless the total ListCalls gives for a one-call page of f equals
// the number of calls the list itself finds for f: the two come from different queries (count
// tables or a count against the page's own conditions).
func checkTotalMatchesList(t *testing.T, st *store.Store, accountID int64, f store.CallFilter, what string) {
	t.Helper()
	ctx := context.Background()
	f.Limit = 1000
	all, _, err := st.ListCalls(ctx, accountID, f)
	if err != nil {
		t.Fatal(err)
	}
	f.Limit = 1
	_, total, err := st.ListCalls(ctx, accountID, f)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(all) {
		t.Errorf("%s: total %d, the list finds %d", what, total, len(all))
	}
}

// recordCallReports stores in as one group of reports with no events, as the ingestion API
// does (store.CallReports), failing the test on error.
func recordCallReports(t *testing.T, st *store.Store, in []store.CallReport) []store.ReportedCall {
	t.Helper()
	ctx := context.Background()
	keys := make([]store.CallReportKey, len(in))
	for i, r := range in {
		keys[i] = store.CallReportKey{ToE164: r.ToE164, PlatformRef: r.PlatformRef}
	}
	tx, err := st.BeginCallReports(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close(ctx)
	tx.Plan(in)
	out, _, err := tx.Commit(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
