package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// planNode is the part of EXPLAIN (FORMAT JSON) the test reads.
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	Plans     []planNode `json:"Plans"`
}

// scans lists the plan's scans of a table as "Node Type" or "Node Type index" (a bitmap
// heap scan names the indexes of its bitmap, joined by "+").
func (n planNode) scans(table string, out []string) []string {
	if n.Relation == table {
		index := n.IndexName
		if n.NodeType == "Bitmap Heap Scan" {
			index = strings.Join(n.bitmapIndexes(nil), "+")
		}
		out = append(out, strings.TrimSpace(n.NodeType+" "+index))
	}
	for _, c := range n.Plans {
		out = c.scans(table, out)
	}
	return out
}

// bitmapIndexes lists the indexes the bitmap scans below n read.
func (n planNode) bitmapIndexes(out []string) []string {
	if n.NodeType == "Bitmap Index Scan" {
		out = append(out, n.IndexName)
	}
	for _, c := range n.Plans {
		if c.Relation == "" {
			out = c.bitmapIndexes(out)
		}
	}
	return out
}

// The call list's page of every filter the API offers reads calls through an index, never a
// sequential scan, on an account with tens of thousands of calls, and so does its count when it
// is counted on calls: an index dropped or a condition written so that no index can serve it
// fails here.
func TestCallListPagesUseIndexes(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	exec := sqlExecutor(t, st)
	big, err := st.CreateAccount(ctx, store.NewAccount{Name: "Big", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	// 60,000 calls over 120 days for the big account, 5,000 for another; every seventh
	// voicemail, one in ten with a sentiment and an urgency, callers spread over 5,000 numbers.
	for _, a := range []struct {
		id int64
		n  int
	}{{big.ID, 60000}, {other.ID, 5000}} {
		exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, caller_name, disposition, filtered, started_at, sentiment, urgency)
			SELECT $1::bigint, 'call_plan_' || $1::bigint || '_' || g, '+4477009' || lpad((g % 5000)::text, 5, '0'), '+442079460000',
				'Caller ' || (g % 5000), (ARRAY['answered','no-answer','voicemail','failed','busy','answered','answered'])[1 + g % 7],
				g % 50 = 0, now() - (g * interval '170 seconds'),
				CASE WHEN g % 10 = 0 THEN (ARRAY['positive','neutral','negative'])[1 + g % 3] END,
				CASE WHEN g % 10 = 0 THEN (ARRAY['low','normal','high'])[1 + (g / 10) % 3] END
			FROM generate_series(1, $2::int) g`, a.id, a.n)
	}
	// 2,000 contacts of the big account named "Person n", each with the number of a caller.
	exec(`INSERT INTO contacts (account_id, public_id, display_name, source)
		SELECT $1::bigint, 'ct_plan_' || g, 'Person ' || g, 'manual' FROM generate_series(0, 1999) g`, big.ID)
	exec(`INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		SELECT id, account_id, 0, p.e164, p.e164 FROM contacts,
			LATERAL (SELECT '+4477009' || lpad(split_part(display_name, ' ', 2), 5, '0') AS e164) p
		WHERE account_id = $1`, big.ID)
	exec(`ANALYZE`)
	weekAgo := time.Now().AddDate(0, 0, -7)
	for _, tc := range []struct {
		name   string
		filter store.CallFilter
		index  string // the index the page should use ("" for any)
	}{
		{"default (business calls: nearly all, either index serves)", store.CallFilter{Activity: "business"}, ""},
		{"all", store.CallFilter{Activity: "all"}, "calls_account_started"},
		{"filtered", store.CallFilter{Activity: "filtered"}, "calls_account_activity_started"},
		{"a later page", store.CallFilter{Activity: "all", Offset: 1000}, "calls_account_started"},
		{"last 7 days", store.CallFilter{Activity: "all", From: &weekAgo}, "calls_account_started"},
		{"status", store.CallFilter{Activity: "all", Status: "voicemail"}, "calls_account_disposition_started"},
		{"sentiment", store.CallFilter{Activity: "all", Sentiment: "negative"}, "calls_account_sentiment_started"},
		{"urgency", store.CallFilter{Activity: "all", Urgency: "high"}, "calls_account_urgency_started"},
		{"search by number", store.CallFilter{Activity: "all", Search: "900123", SearchDigits: "900123"}, ""},
		{"status, last 7 days", store.CallFilter{Activity: "all", Status: "busy", From: &weekAgo}, "calls_account_disposition_started"},
		{"urgency, last 7 days", store.CallFilter{Activity: "all", Urgency: "high", From: &weekAgo}, "calls_account_urgency_started"},
		{"search by name", store.CallFilter{Activity: "all", Search: "caller 4242"}, ""},
		{"search by a contact's name", store.CallFilter{Activity: "all", Search: "person 42"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.filter
			f.Limit = 25
			if page, _, err := st.ListCalls(ctx, big.ID, f); err != nil || len(page) == 0 {
				t.Fatalf("the filter matches no call (%v): its plan would say little", err)
			}
			raw, err := st.ExplainCallPage(ctx, big.ID, f)
			if err != nil {
				t.Fatal(err)
			}
			scans := explainedScans(t, raw, "calls")
			if len(scans) == 0 {
				t.Fatalf("no scan of calls in %s", raw)
			}
			for _, s := range scans {
				if strings.HasPrefix(s, "Seq Scan") {
					t.Errorf("the page: a sequential scan of calls: %v", scans)
				}
				if tc.index != "" && !strings.HasSuffix(s, " "+tc.index) {
					t.Errorf("the page: calls read by %v, want the index %s", scans, tc.index)
				}
			}
			// The count (summed from count tables where they can answer, else on calls).
			if raw, err = st.ExplainCallCount(ctx, big.ID, f); err != nil {
				t.Fatal(err)
			}
			counted := explainedScans(t, raw, "calls")
			for _, s := range counted {
				if strings.HasPrefix(s, "Seq Scan") {
					t.Errorf("the count: a sequential scan of calls: %v", counted)
				}
			}
		})
	}
}

// explainedScans parses EXPLAIN (FORMAT JSON) output and lists its scans of table.
func explainedScans(t *testing.T, raw, table string) []string {
	t.Helper()
	var plan []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	return plan[0].Plan.scans(table, nil)
}
