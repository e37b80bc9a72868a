package apiserver

import (
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of GET /billing/ledger (spec: Limits, the usual 100 and 25).
const (
	ledgerMaxPerPage = 100
	ledgerPerPage    = 25
)

// LedgerEntryPage is GET /billing/ledger (a named type, so the description names its schema).
type LedgerEntryPage struct {
	Page[LedgerEntry]
}

// ReceiptList is GET /billing/receipts.
type ReceiptList struct {
	Data []Receipt `json:"data" required:"true"`
}

type billingResource struct{ *Server }

func (r billingResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/billing").Produces(restful.MIME_JSON)
	read := Access{Permission: auth.Read} // billing reads do not need Integrations
	ws.Route(protect(inboxParams(ws.GET("/ledger").To(r.ledger).Operation("listLedgerEntries").
		Doc("Every change to the prepaid balance, newest first. amount_pence is negative for a charge."),
		pageParams(ws, ledgerMaxPerPage, ledgerPerPage)...).
		Returns(http.StatusOK, "OK", LedgerEntryPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}), read))
	ws.Route(protect(ws.GET("/receipts").To(r.receipts).Operation("listReceipts").
		Doc("The latest 48 payments, newest first.").
		Returns(http.StatusOK, "OK", ReceiptList{}), read))
	c.Add(ws)
}

func (r billingResource) ledger(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	paging := parsePaging(req, fe, ledgerMaxPerPage, ledgerPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	list, total, err := r.store.ListLedgerEntries(req.Request.Context(), principal(req).Account.ID, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, LedgerEntryPage{pageOf(r.Server, req, paging, total, convertRows(list, ledgerEntryAnswer))})
}

func (r billingResource) receipts(req *restful.Request, resp *restful.Response) {
	list, err := r.store.ListReceipts(req.Request.Context(), principal(req).Account.ID, store.ReceiptsListed)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if list == nil {
		list = []store.Receipt{}
	}
	writeJSON(resp, http.StatusOK, ReceiptList{Data: convertRows(list, receiptAnswer)})
}

// LedgerEntry is one change to the prepaid balance.
type LedgerEntry struct {
	Type              string    `json:"type" required:"true" enum:"charge,topup,refund,adjustment"`
	AmountPence       int64     `json:"amount_pence" required:"true"`
	BalanceAfterPence int64     `json:"balance_after_pence" required:"true"`
	Note              string    `json:"note" required:"true"`
	CreatedAt         time.Time `json:"created_at" required:"true"`
}

// Receipt is a payment.
type Receipt struct {
	Number      string    `json:"number" required:"true"`
	Kind        string    `json:"kind" required:"true" enum:"topup,subscription,bundle,addon"`
	Description string    `json:"description" required:"true"`
	AmountPence int64     `json:"amount_pence" required:"true"`
	PaidAt      time.Time `json:"paid_at" required:"true"`
}

// ledgerEntryAnswer shapes a ledger row as the API answers it.
func ledgerEntryAnswer(e store.LedgerEntry) LedgerEntry {
	return LedgerEntry{Type: e.Type, AmountPence: e.AmountPence, BalanceAfterPence: e.BalanceAfterPence, Note: e.Note, CreatedAt: e.CreatedAt}
}

// receiptAnswer shapes a receipt row as the API answers it.
func receiptAnswer(r store.Receipt) Receipt {
	return Receipt{Number: r.Number, Kind: r.Kind, Description: r.Description, AmountPence: r.AmountPence, PaidAt: r.PaidAt}
}
