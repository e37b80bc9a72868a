package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func ibTopUp(t *testing.T, st *store.Store, accountID, pence int64, at time.Time) {
	t.Helper()
	if _, err := st.TopUp(context.Background(), accountID, pence, at); err != nil {
		t.Fatal(err)
	}
}

func ibLedger(t *testing.T, st *store.Store, accountID int64, kind string, pence int64, note string, at time.Time) {
	t.Helper()
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ApplyLedgerEntry(context.Background(), accountID, kind, pence, note, "", at)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ibWantBalance(t *testing.T, h *harness, key string, want int64) {
	t.Helper()
	got := ibWantStatus(t, h, key, "GET", "/v1/balance", nil, 200)
	ibWantFields(t, "balance", got, map[string]any{"balance_pence": int(want), "currency": "GBP"})
}

// A Team account without Integrations: billing and balance reads do not need the add-on.
func TestBillingLedgerAndBalance(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Team)
	other := apitest.NewTenant(t, h.store, plans.Starter)
	acct := tenant.Account.ID
	key := apitest.NewKey(t, h.store, tenant.Owner.ID) // read only
	const path = "/v1/billing/ledger"

	// Nothing yet.
	page := ibGetPage(t, h, key, path)
	ibWantIDs(t, "empty ledger", page.ids("type"))
	ibWantEnvelope(t, h, page, path, 1, 1, 25, 0, "", "")
	ibWantBalance(t, h, key, 0)

	ibTopUp(t, h.store, acct, 1000, ibNow.Add(-5*24*time.Hour))
	ibLedger(t, h.store, acct, store.LedgerCharge, -37, "Transcription of a 7-minute call", ibNow.Add(-4*24*time.Hour))
	ibTopUp(t, h.store, acct, 500, ibNow.Add(-24*time.Hour))
	ibLedger(t, h.store, acct, store.LedgerRefund, 37, "Transcription refunded", ibNow.Add(-time.Hour))
	ibTopUp(t, h.store, other.Account.ID, 999, ibNow)

	page = ibGetPage(t, h, key, path)
	ibWantEnvelope(t, h, page, path, 1, 1, 25, 4, "", "")
	if len(page.Data) != 4 {
		t.Fatalf("ledger = %v", page.Data)
	}
	want := []map[string]any{
		{"type": "refund", "amount_pence": 37, "balance_after_pence": 1500, "note": "Transcription refunded", "created_at": ibNow.Add(-time.Hour)},
		{"type": "topup", "amount_pence": 500, "balance_after_pence": 1463, "note": "Balance top-up", "created_at": ibNow.Add(-24 * time.Hour)},
		{"type": "charge", "amount_pence": -37, "balance_after_pence": 963, "note": "Transcription of a 7-minute call", "created_at": ibNow.Add(-4 * 24 * time.Hour)},
		{"type": "topup", "amount_pence": 1000, "balance_after_pence": 1000, "note": "Balance top-up", "created_at": ibNow.Add(-5 * 24 * time.Hour)},
	}
	for i, w := range want {
		ibWantFields(t, fmt.Sprintf("ledger[%d]", i), page.Data[i], w)
	}
	ibWantBalance(t, h, key, 1500)

	// Paging, newest first across pages; past the end is empty.
	page = ibGetPage(t, h, key, path+"?per_page=3")
	ibWantIDs(t, "page 1 notes", page.ids("note"), "Transcription refunded", "Balance top-up", "Transcription of a 7-minute call")
	ibWantEnvelope(t, h, page, path, 1, 2, 3, 4, "per_page=3&page=2", "")
	page = ibGetPage(t, h, key, path+"?per_page=3&page=2")
	if len(page.Data) != 1 || page.Data[0]["amount_pence"] != float64(1000) {
		t.Errorf("page 2 = %v", page.Data)
	}
	ibWantEnvelope(t, h, page, path, 2, 2, 3, 4, "", "per_page=3&page=1")
	page = ibGetPage(t, h, key, path+"?per_page=3&page=3")
	ibWantIDs(t, "past the end", page.ids("type"))
	ibWantEnvelope(t, h, page, path, 3, 2, 3, 4, "", "per_page=3&page=2")
	if page := ibGetPage(t, h, key, path+"?per_page=100"); page.PerPage != 100 || len(page.Data) != 4 {
		t.Errorf("per_page=100: %d, %d rows", page.PerPage, len(page.Data))
	}
	for _, q := range []struct{ query, field string }{
		{"per_page=101", "per_page"}, {"per_page=0", "per_page"}, {"page=0", "page"}, {"page=-1", "page"}, {"per_page=ten", "per_page"},
	} {
		ibWant422(t, h, key, "GET", path+"?"+q.query, nil, q.field)
	}

	// The balance is read fresh: a charge after the key was made shows at once.
	ibLedger(t, h.store, acct, store.LedgerCharge, -500, "Transcription", ibNow)
	ibWantBalance(t, h, key, 1000)
	if page := ibGetPage(t, h, key, path); page.Total != 5 || page.Data[0]["balance_after_pence"] != float64(1000) {
		t.Errorf("after a charge: total %d, first %v", page.Total, page.Data[0])
	}

	// Another account (on Starter, which cannot have Integrations) sees only its own.
	page = ibGetPage(t, h, other.OwnerKey, path)
	if page.Total != 1 || page.Data[0]["amount_pence"] != float64(999) {
		t.Errorf("other account's ledger = %+v", page)
	}
	ibWantBalance(t, h, other.OwnerKey, 999)
}

func TestBillingReceipts(t *testing.T) {
	h, _ := ibHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Team) // no Integrations needed
	other := apitest.NewTenant(t, h.store, plans.Business)
	ctx := context.Background()
	const path = "/v1/billing/receipts"

	get := func(key string) []map[string]any {
		t.Helper()
		resp := h.api.Do(t, key, "GET", path, nil)
		if resp.Status != 200 {
			t.Fatalf("GET %s: %s", path, resp)
		}
		if m := resp.Map(t); len(m) != 1 {
			t.Errorf("receipts answer has fields other than data: %s", resp.Body)
		}
		var v struct {
			Data []map[string]any `json:"data"`
		}
		resp.JSON(t, &v)
		if v.Data == nil {
			t.Fatalf("data is not an array: %s", resp.Body)
		}
		return v.Data
	}
	if rows := get(tenant.OwnerKey); len(rows) != 0 {
		t.Fatalf("no receipts yet: %v", rows)
	}

	// 50 receipts, one a day, inserted out of order; kinds rotate.
	kinds := []string{"topup", "subscription", "bundle", "addon"}
	paidAt := func(i int) time.Time { return ibNow.Add(-time.Duration(50-i) * 24 * time.Hour) }
	for _, i := range []int{7, 49, 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
		28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48} {
		if _, err := storetest.SQL(t, h.store).Exec(ctx, `INSERT INTO receipts (account_id, number, kind, description, amount_pence, paid_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, tenant.Account.ID, fmt.Sprintf("R-%04d", i), kinds[i%4],
			fmt.Sprintf("Payment %d", i), 100*i, paidAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	ibTopUp(t, h.store, other.Account.ID, 2500, ibNow)

	rows := get(tenant.OwnerKey)
	if len(rows) != 48 {
		t.Fatalf("%d receipts, want the latest 48", len(rows))
	}
	for j, row := range rows {
		i := 49 - j // newest first: R-0049 ... R-0002
		ibWantFields(t, fmt.Sprintf("receipt %d", j), row, map[string]any{
			"number": fmt.Sprintf("R-%04d", i), "kind": kinds[i%4], "description": fmt.Sprintf("Payment %d", i),
			"amount_pence": 100 * i, "paid_at": paidAt(i),
		})
	}

	// Another account sees only its own (a top-up issues one).
	rows = get(other.OwnerKey)
	if len(rows) != 1 {
		t.Fatalf("other account's receipts = %v", rows)
	}
	ibWantFields(t, "top-up receipt", rows[0], map[string]any{
		"number": rows[0]["number"], "kind": "topup", "description": "Prepaid balance top-up", "amount_pence": 2500, "paid_at": ibNow,
	})
	// A key with only read may list them.
	if rows := get(apitest.NewKey(t, h.store, tenant.Owner.ID)); len(rows) != 48 {
		t.Errorf("read-only key: %d receipts", len(rows))
	}
}
