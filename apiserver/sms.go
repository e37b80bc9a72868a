package apiserver

import (
	"net/http"
	"time"

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
	Page[SMSConversation]
}

// SMSMessagePage is GET /sms/conversations/{conversation}/messages: a page of messages plus the thread.
type SMSMessagePage struct {
	Page[SMSMessage]
	Conversation SMSConversation `json:"conversation" required:"true"`
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
	writeJSON(resp, http.StatusOK, SMSConversationPage{pageOf(r.Server, req, paging, total, convertRows(list, smsConversationAnswer))})
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
	writeJSON(resp, http.StatusOK, SMSMessagePage{Page: pageOf(r.Server, req, paging, total, convertRows(list, smsMessageAnswer)), Conversation: smsConversationAnswer(conv)})
}

// SMSConversation is a text-message thread: one per number and other party.
type SMSConversation struct {
	PublicID           string    `json:"public_id" required:"true"`
	CounterpartyE164   string    `json:"counterparty_e164" required:"true"`
	NumberE164         string    `json:"number_e164" required:"true"`
	NumberLabel        string    `json:"number_label" required:"true"`
	LastMessagePreview string    `json:"last_message_preview" required:"true"`
	LastMessageAt      time.Time `json:"last_message_at" required:"true"`
	UnreadCount        int       `json:"unread_count" required:"true"`
}

// SMSMessage is one text message of a conversation.
type SMSMessage struct {
	ConversationPublicID string    `json:"conversation_public_id" required:"true"`
	Direction            string    `json:"direction" required:"true" enum:"inbound,outbound"`
	FromE164             string    `json:"from_e164" required:"true"`
	ToE164               string    `json:"to_e164" required:"true"`
	Body                 string    `json:"body" required:"true"`
	Status               string    `json:"status" required:"true"`
	Segments             int       `json:"segments" required:"true"`
	ReceivedAt           time.Time `json:"received_at" required:"true"`
}

// smsConversationAnswer shapes a conversation row as the API answers it.
func smsConversationAnswer(c store.SMSConversation) SMSConversation {
	return SMSConversation{PublicID: c.PublicID, CounterpartyE164: c.CounterpartyE164, NumberE164: c.NumberE164, NumberLabel: c.NumberLabel,
		LastMessagePreview: c.LastMessagePreview, LastMessageAt: c.LastMessageAt, UnreadCount: c.UnreadCount}
}

// smsMessageAnswer shapes a message row as the API answers it.
func smsMessageAnswer(m store.SMSMessage) SMSMessage {
	return SMSMessage{ConversationPublicID: m.ConversationPublicID, Direction: m.Direction, FromE164: m.FromE164, ToE164: m.ToE164,
		Body: m.Body, Status: m.Status, Segments: m.Segments, ReceivedAt: m.ReceivedAt}
}
