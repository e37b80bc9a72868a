package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
)

// Balance is GET /balance.
type Balance struct {
	BalancePence int64  `json:"balance_pence" required:"true"`
	Currency     string `json:"currency" required:"true" enum:"GBP"`
}

type balanceResource struct{ *Server }

func (r balanceResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/balance").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.get).Operation("getBalance").
		Doc("The prepaid balance in pence.").
		Returns(http.StatusOK, "OK", Balance{}), Access{Permission: auth.Read}))
	c.Add(ws)
}

func (r balanceResource) get(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	// Read fresh: the principal was loaded with the key, but a charge may have landed since.
	acct, err := r.store.GetAccount(req.Request.Context(), p.Account.ID)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, Balance{BalancePence: acct.BalancePence, Currency: "GBP"})
}
