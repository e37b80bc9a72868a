package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of the text-message operations (spec: Limits).
const (
	conversationsMaxPerPage = 100
	conversationsPerPage    = 25
	smsMessagesMaxPerPage   = 200
	smsMessagesPerPage      = 100
)

// SMSConversationPage is GET /sms/conversations (a named type, so the description names its schema).
type SMSConversationPage struct {
	Page[store.SMSConversation]
}

// SMSMessagePage is GET /sms/conversations/{conversation}/messages: a page of messages plus the thread.
type SMSMessagePage struct {
	Page[store.SMSMessage]
	Conversation store.SMSConversation `json:"conversation" required:"true"`
}

type smsResource struct{ *Server }

func (r smsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/sms").Produces(restful.MIME_JSON)
	access := Access{Permission: auth.Read, NeedsIntegrations: true}
	ws.Route(protect(inboxParams(ws.GET("/conversations").To(r.conversations).Operation("listSmsConversations").
		Doc("Text-message threads, most recent first. One thread exists per number and other party."),
		pageParams(ws, conversationsMaxPerPage, conversationsPerPage)...).
		Returns(http.StatusOK, "OK", SMSConversationPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}), access))
	ws.Route(protect(inboxParams(ws.GET("/conversations/{conversation}/messages").To(r.messages).Operation("listSmsMessages").
		Doc("The messages of a thread, oldest first, with the thread itself as conversation.").
		Param(ws.PathParameter("conversation", "The conversation's public_id.").DataType("string")),
		pageParams(ws, smsMessagesMaxPerPage, smsMessagesPerPage)...).
		Returns(http.StatusOK, "OK", SMSMessagePage{}).
		Returns(http.StatusNotFound, "No such conversation on this account.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}), access))
	c.Add(ws)
}

// inboxParams documents several parameters on a route (go-restful adds them one at a time).
func inboxParams(rb *restful.RouteBuilder, params ...*restful.Parameter) *restful.RouteBuilder {
	for _, p := range params {
		rb.Param(p)
	}
	return rb
}

func (r smsResource) conversations(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	paging := parsePaging(req, fe, conversationsMaxPerPage, conversationsPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	list, total, err := r.store.ListSMSConversations(req.Request.Context(), principal(req).Account.ID, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, SMSConversationPage{pageOf(r.Server, req, paging, total, list)})
}

func (r smsResource) messages(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	paging := parsePaging(req, fe, smsMessagesMaxPerPage, smsMessagesPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	id := req.PathParameter("conversation")
	ctx := req.Request.Context()
	conv, err := r.store.GetSMSConversation(ctx, principal(req).Account.ID, id)
	if err != nil {
		r.respond(req, resp, "conversation", nil, err)
		return
	}
	list, total, err := r.store.ListSMSMessages(ctx, conv, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, SMSMessagePage{Page: pageOf(r.Server, req, paging, total, list), Conversation: conv})
}
