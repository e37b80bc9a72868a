package portal

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// ledgerPerPage is the ledger's page size on the balance page.
const ledgerPerPage = 50

type balanceView struct {
	BalancePence int64
	Ledger       []store.LedgerEntry
	Receipts     []store.Receipt
	Page, Pages  int
	Prev, Next   string
}

// balance shows the prepaid balance, the ledger a page at a time and the latest receipts:
// the store reads behind GET /v1/balance, /v1/billing/ledger and /v1/billing/receipts.
func (p *Portal) balance(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	pageNo, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || pageNo < 1 {
		pageNo = 1
	}
	entries, total, err := p.store.ListLedgerEntries(ctx, v.Account.ID, ledgerPerPage, (pageNo-1)*ledgerPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	receipts, err := p.store.ListReceipts(ctx, v.Account.ID, store.ReceiptsListed)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	// v.Account was read for this request, so its balance is current.
	view := &balanceView{BalancePence: v.Account.BalancePence, Ledger: entries, Receipts: receipts, Page: pageNo,
		Pages: max(1, (total+ledgerPerPage-1)/ledgerPerPage)}
	if pageNo > 1 {
		view.Prev = fmt.Sprintf("/portal/balance?page=%d", pageNo-1)
	}
	if pageNo < view.Pages {
		view.Next = fmt.Sprintf("/portal/balance?page=%d", pageNo+1)
	}
	p.render(w, r, http.StatusOK, "balance.html", page{Title: "Balance", Viewer: &v, Balance: view})
}

// pounds formats integer pence as pounds and pence: -1234 is "-£12.34".
func pounds(pence int64) string {
	sign := ""
	if pence < 0 {
		sign, pence = "-", -pence
	}
	return fmt.Sprintf("%s£%d.%02d", sign, pence/100, pence%100)
}
