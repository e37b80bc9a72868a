package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// BlockedCallerList is GET /blocked-callers.
type BlockedCallerList struct {
	Data []BlockedCaller `json:"data" required:"true"`
}

type blockedCallersResource struct{ *Server }

func (r blockedCallersResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/blocked-callers").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.list).Operation("listBlockedCallers").
		Doc("All blocked callers, newest first, each saying what its calls get (action) and the number it applies to (null: every number).").
		Returns(http.StatusOK, "OK", BlockedCallerList{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	c.Add(ws)
}

func (r blockedCallersResource) list(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	list, err := r.store.ListBlockedCallers(req.Request.Context(), p.Account.ID, accountLocation(p.Account.TimeZone))
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if list == nil {
		list = []store.BlockedCaller{}
	}
	writeJSON(resp, http.StatusOK, BlockedCallerList{Data: convertRows(list, blockedCallerAnswer)})
}

// BlockedCallerNumber is the number a block applies to.
type BlockedCallerNumber struct {
	PublicID string `json:"public_id" required:"true"`
	E164     string `json:"e164" required:"true"`
	Label    string `json:"label" required:"true"`
}

// BlockedCaller is a caller whose calls are rejected or sent straight to voicemail.
type BlockedCaller struct {
	PublicID string               `json:"public_id" required:"true"`
	E164     string               `json:"e164" required:"true"`
	Action   string               `json:"action" required:"true" enum:"reject,voicemail"`
	Label    string               `json:"label" required:"true"`
	Number   *BlockedCallerNumber `json:"number" required:"true" nullable:"true"`
	// CreatedAt is the day the block was added, in the account's time zone.
	CreatedAt string `json:"created_at" required:"true" format:"date"`
}

// blockedCallerAnswer shapes a blocked caller row as the API answers it.
func blockedCallerAnswer(r store.BlockedCaller) BlockedCaller {
	return BlockedCaller{PublicID: r.PublicID, E164: r.E164, Action: r.Action, Label: r.Label,
		Number:    convertPtr(r.Number, func(v store.BlockedCallerNumber) BlockedCallerNumber { return BlockedCallerNumber(v) }),
		CreatedAt: r.CreatedAt}
}
