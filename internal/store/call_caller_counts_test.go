package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// callerCountsMatchCalls fails unless call_caller_counts and call_name_counts equal
// aggregates of calls.
func callerCountsMatchCalls(t *testing.T, st *store.Store, step string) {
	t.Helper()
	countQueryMatches(t, st, step, callerCheck, true)
}

var callerCheck = countCheck{"caller count rows", `SELECT (SELECT count(*) FROM (
			SELECT account_id, filtered, from_e164, lower(caller_name) AS caller_name_lower, count(*) AS calls
			FROM calls GROUP BY 1, 2, 3, 4) a
		FULL JOIN (SELECT account_id, filtered, from_e164, caller_name_lower, sum(calls) AS calls
			FROM call_caller_counts%[1]s GROUP BY 1, 2, 3, 4 HAVING sum(calls) <> 0) b
			USING (account_id, filtered, from_e164, caller_name_lower)
		WHERE a.calls IS DISTINCT FROM b.calls)
		+ (SELECT count(*) FROM (
			SELECT account_id, filtered, lower(caller_name) AS caller_name_lower, count(*) AS calls,
				count(*) FILTER (WHERE EXISTS (SELECT 1 FROM contact_phones cp WHERE cp.account_id = c.account_id AND cp.e164 = c.from_e164)) AS from_directory
			FROM calls c GROUP BY 1, 2, 3) a
		FULL JOIN (SELECT account_id, filtered, caller_name_lower, sum(calls) AS calls, sum(calls_from_directory) AS calls_from_directory
			FROM call_name_counts%[1]s GROUP BY 1, 2, 3 HAVING sum(calls) <> 0 OR sum(calls_from_directory) <> 0) b USING (account_id, filtered, caller_name_lower)
		WHERE a.calls IS DISTINCT FROM b.calls OR a.from_directory IS DISTINCT FROM b.calls_from_directory)`}

// The total of a search by name comes from call_name_counts and call_caller_counts; it must equal the number of
// calls the list itself finds, however names, contacts and calls change.
func TestCallerNameSearchTotals(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	now := time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Search Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateAccount(ctx, store.NewAccount{Name: "Other Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	exec := sqlExecutor(t, st)
	// 20 callers: caller g % 20 has number +4477009000NN and a network name by g % 5.
	insertCalls := func(accountID int64, prefix string) {
		exec(`INSERT INTO calls (account_id, public_id, from_e164, to_e164, caller_name, disposition, filtered, started_at)
			SELECT $1, $2 || g, '+4477009000' || lpad((g % 20)::text, 2, '0'), '+442070000001',
				(ARRAY['Grace Okafor', 'GRACE OKAFOR-SMITH', 'Tom Baker', '', 'Ahmed 100% Khan'])[1 + (g % 20) % 5],
				(ARRAY['answered', 'busy', 'voicemail'])[1 + g % 3], g % 7 = 0,
				timestamptz '2026-07-01 00:00Z' + g * interval '17 minutes'
			FROM generate_series(1, 300) g`, accountID, prefix)
	}
	insertCalls(acct.ID, "call_search_")
	insertCalls(other.ID, "call_search_other_")
	callerCountsMatchCalls(t, st, "inserting")

	check := func(step string) {
		t.Helper()
		for _, activity := range []string{"business", "filtered", "all"} {
			for _, search := range []string{"okafor", "grace", "TOM", "baker", "plumbing", "smith", "100%", "_", "nobody"} {
				checkTotalMatchesList(t, st, acct.ID, store.CallFilter{Activity: activity, Search: search},
					fmt.Sprintf("%s: activity=%s search=%q", step, activity, search))
			}
		}
	}
	check("no contacts")

	// A contact names the calls of its numbers: caller 02 (network name "Tom Baker") becomes
	// "Okafor Plumbing", caller 00 ("Grace Okafor") becomes "Tom Smith".
	plumbing, err := st.UpsertContact(ctx, acct.ID, store.ContactInput{Source: "api", DisplayName: "Okafor Plumbing",
		Phones: []store.ContactPhoneInput{{Number: "+447700900002"}}}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpsertContact(ctx, acct.ID, store.ContactInput{Source: "api", DisplayName: "Tom Smith",
		Phones: []store.ContactPhoneInput{{Number: "+447700900000"}}}, now, nil); err != nil {
		t.Fatal(err)
	}
	// The other account's contacts change nothing here.
	if _, err := st.UpsertContact(ctx, other.ID, store.ContactInput{Source: "api", DisplayName: "Baker Okafor",
		Phones: []store.ContactPhoneInput{{Number: "+447700900003"}}}, now, nil); err != nil {
		t.Fatal(err)
	}
	check("with contacts")
	// A later contact with the same number takes over its calls' name.
	if _, err := st.UpsertContact(ctx, acct.ID, store.ContactInput{Source: "api", DisplayName: "Nobody Special",
		Phones: []store.ContactPhoneInput{{Number: "+447700900002"}}}, now.Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	check("a newer contact for the same number")
	callerCountsMatchCalls(t, st, "adding contacts")
	if err := st.DeleteContact(ctx, acct.ID, plumbing.PublicID); err != nil {
		t.Fatal(err)
	}
	check("a contact deleted")
	callerCountsMatchCalls(t, st, "deleting a contact")
	// A contact's phones replaced: one number leaves the directory, another joins it twice.
	exec(`UPDATE contact_phones SET e164 = '+447700900004' WHERE account_id = $1 AND e164 = '+447700900000'`, acct.ID)
	exec(`INSERT INTO contact_phones (contact_id, account_id, position, e164, raw_number)
		SELECT contact_id, account_id, position + 1, '+447700900004', '07700 900004' FROM contact_phones WHERE account_id = $1`, acct.ID)
	callerCountsMatchCalls(t, st, "changing phones")
	check("changed phones")

	exec(`UPDATE calls SET caller_name = 'Grace Okafor' WHERE public_id LIKE 'call_search_1%'`)
	callerCountsMatchCalls(t, st, "renaming callers")
	exec(`UPDATE calls SET filtered = NOT filtered, from_e164 = '+447700900019' WHERE public_id LIKE 'call_search_2%'`)
	callerCountsMatchCalls(t, st, "moving calls between callers")
	exec(`UPDATE calls SET disposition = 'answered'`)
	callerCountsMatchCalls(t, st, "an update that moves no caller")
	exec(`DELETE FROM calls WHERE public_id LIKE 'call_search_3%'`)
	callerCountsMatchCalls(t, st, "deleting calls")
	check("after the calls changed")

	exec(`DELETE FROM accounts WHERE id = $1`, other.ID)
	callerCountsMatchCalls(t, st, "deleting an account")
	exec(`TRUNCATE contact_phones`)
	callerCountsMatchCalls(t, st, "truncating phones")
	exec(`TRUNCATE calls CASCADE`)
	callerCountsMatchCalls(t, st, "truncating calls")
}

// Calls and contacts for the same numbers written at the same moment leave the counts exact
// (the per-account advisory lock of migration 00012).
func TestCallerCountsUnderConcurrentDirectoryChanges(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	now := time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Race Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	number := func(i int) string { return fmt.Sprintf("+4477009100%02d", i%10) }
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				if _, err := st.SQL().Exec(ctx, `INSERT INTO calls (account_id, public_id, from_e164, to_e164, caller_name, disposition, started_at)
					VALUES ($1, $2, $3, '+442070000001', 'Pat Race', 'answered', $4)`,
					acct.ID, fmt.Sprintf("call_race_%d_%d", w, i), number(w*7+i), now.Add(time.Duration(i)*time.Minute)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				ext := fmt.Sprintf("race-%d", w)
				c, err := st.UpsertContact(ctx, acct.ID, store.ContactInput{Source: "crm", ExternalID: &ext, DisplayName: "Racer",
					Phones: []store.ContactPhoneInput{{Number: number(i)}, {Number: number(i + w + 3)}}}, now.Add(time.Duration(i)*time.Second), nil)
				if err != nil {
					errs <- err
					return
				}
				if i%9 == 8 {
					if err := st.DeleteContact(ctx, acct.ID, c.PublicID); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	callerCountsMatchCalls(t, st, "concurrent calls and contact changes")
}
