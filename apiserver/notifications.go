package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of GET /notifications (spec: Limits, the usual 100 and 25).
const (
	notificationsMaxPerPage = 100
	notificationsPerPage    = 25
)

// NotificationPage is GET /notifications: a page plus the user's unread total.
type NotificationPage struct {
	Page[Notification]
	// UnreadCount is the user's unread total, whatever the unread filter.
	UnreadCount int `json:"unread_count" required:"true"`
}

// NotificationReadResult is POST /notifications/{notification}/read.
type NotificationReadResult struct {
	ID          string `json:"id" required:"true" format:"uuid"`
	Read        bool   `json:"read" required:"true"`
	UnreadCount int    `json:"unread_count" required:"true"`
}

// NotificationsReadAllResult is POST /notifications/read-all.
type NotificationsReadAllResult struct {
	UnreadCount int `json:"unread_count" required:"true"`
}

type notificationsResource struct{ *Server }

func (r notificationsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/notifications").Produces(restful.MIME_JSON)
	write := Access{Permission: auth.InboxWrite, NeedsIntegrations: true}
	ws.Route(protect(inboxParams(ws.GET("").To(r.list).Operation("listNotifications").
		Doc("The key's user's own notifications, newest first, with the user's unread total.").
		Param(enumParam(ws, "unread", "1: unread only; 0 (default): all.", "0", "1").DefaultValue("0")),
		pageParams(ws, notificationsMaxPerPage, notificationsPerPage)...).
		Returns(http.StatusOK, "OK", NotificationPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	// read-all is registered before {notification}/read; the paths differ in length anyway.
	ws.Route(protect(noBodyErrors(r.idempotent(ws.POST("/read-all"), r.readAll).Operation("markAllNotificationsRead").
		Doc("Mark all the key's user's notifications read. No body (an empty body or any JSON is ignored).").
		Returns(http.StatusOK, "OK", NotificationsReadAllResult{})), write))
	ws.Route(protect(noBodyErrors(r.idempotent(ws.POST("/{notification}/read"), r.read).Operation("markNotificationRead").
		Doc("Mark one of the key's user's notifications read. No body (an empty body or any JSON is ignored).").
		Param(ws.PathParameter("notification", "The notification's id (a UUID).").DataType("string").DataFormat("uuid")).
		Returns(http.StatusOK, "OK", NotificationReadResult{}).
		Returns(http.StatusNotFound, "No such notification for this key's user.", ErrorBody{})), write))
	c.Add(ws)
}

func (r notificationsResource) list(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	unread := queryEnum(req, fe, "unread", "0", "0", "1")
	paging := parsePaging(req, fe, notificationsMaxPerPage, notificationsPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	p := principal(req)
	list, total, unreadCount, err := r.store.ListNotifications(req.Request.Context(), p.Account.ID, p.User.ID, unread == "1",
		paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, NotificationPage{Page: pageOf(r.Server, req, paging, total, convertRows(list, notificationAnswer)), UnreadCount: unreadCount})
}

func (r notificationsResource) read(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	if !readNoBody(req, resp) {
		return
	}
	p := principal(req)
	id, unread, err := r.store.MarkNotificationRead(req.Request.Context(), p.Account.ID, p.User.ID,
		req.PathParameter("notification"), r.cfg.Clock.Now(), claim)
	r.respond(req, resp, "notification", NotificationReadResult{ID: id, Read: true, UnreadCount: unread}, err)
}

func (r notificationsResource) readAll(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	if !readNoBody(req, resp) {
		return
	}
	p := principal(req)
	unread, err := r.store.MarkAllNotificationsRead(req.Request.Context(), p.Account.ID, p.User.ID, r.cfg.Clock.Now(), claim)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, NotificationsReadAllResult{UnreadCount: unread})
}

// maxIgnoredBodyBytes bounds the body of an operation that takes none.
const maxIgnoredBodyBytes = 64 << 10

// readNoBody checks the body of an operation that takes none: absent, empty or any JSON value
// (many clients send {}) is accepted and ignored; anything else is refused as readJSON would
// refuse it (415 not JSON, 400 malformed, 413 too large), never a 500. On refusal it writes
// the response and returns false.
func readNoBody(req *restful.Request, resp *restful.Response) bool {
	if req.Request.Body == nil || req.Request.Body == http.NoBody || req.Request.ContentLength == 0 {
		return true
	}
	data, err := io.ReadAll(http.MaxBytesReader(resp.ResponseWriter, req.Request.Body, maxIgnoredBodyBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		writeError(resp, http.StatusRequestEntityTooLarge, "This operation takes no body; the one sent is too large.")
		return false
	case err != nil:
		writeError(resp, http.StatusBadRequest, "The body could not be read.")
		return false
	case len(bytes.TrimSpace(data)) == 0:
		return true
	}
	if ct := req.HeaderParameter("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != restful.MIME_JSON {
			writeError(resp, http.StatusUnsupportedMediaType, "This operation takes no body; if you send one, send JSON with Content-Type: application/json.")
			return false
		}
	}
	if !json.Valid(data) {
		writeError(resp, http.StatusBadRequest, "This operation takes no body, and the one sent is not valid JSON.")
		return false
	}
	return true
}

// noBodyErrors documents the refusals of readNoBody.
func noBodyErrors(rb *restful.RouteBuilder) *restful.RouteBuilder {
	return rb.
		Returns(http.StatusBadRequest, "A body was sent and is not valid JSON.", ErrorBody{}).
		Returns(http.StatusRequestEntityTooLarge, "The body is too large.", ErrorBody{}).
		Returns(http.StatusUnsupportedMediaType, "A body was sent and is not JSON.", ErrorBody{})
}

// Notification is a message to one user.
type Notification struct {
	ID        string     `json:"id" required:"true" format:"uuid"`
	Type      string     `json:"type" required:"true"`
	Title     string     `json:"title" required:"true"`
	Body      string     `json:"body" required:"true"`
	URL       string     `json:"url" required:"true"`
	Read      bool       `json:"read" required:"true"`
	CreatedAt time.Time  `json:"created_at" required:"true"`
	ReadAt    *time.Time `json:"read_at" required:"true"`
}

// notificationAnswer shapes a notification row as the API answers it.
func notificationAnswer(r store.Notification) Notification {
	return Notification{ID: r.ID, Type: r.Type, Title: r.Title, Body: r.Body, URL: r.URL, Read: r.Read,
		CreatedAt: r.CreatedAt, ReadAt: r.ReadAt}
}
