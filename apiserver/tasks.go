package apiserver

import (
	"net/http"
	"slices"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of GET /tasks (spec: Limits, the usual 100 and 25).
const (
	tasksMaxPerPage = 100
	tasksPerPage    = 25
)

// TaskPage is GET /tasks (a named type, so the description names its schema).
type TaskPage struct {
	Page[Task]
}

// TaskStatusUpdate is the body of PATCH /tasks/{task}.
type TaskStatusUpdate struct {
	Status string `json:"status" required:"true" enum:"open,done"`
}

type tasksResource struct{ *Server }

func (r tasksResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/tasks").Produces(restful.MIME_JSON)
	ws.Route(protect(inboxParams(ws.GET("").To(r.list).Operation("listTasks").
		Doc("Follow-up to-dos found in calls, newest first.").
		Param(enumParam(ws, "status", "Which to-dos: open (default), done or all.", "open", "done", "all").DefaultValue("open")),
		pageParams(ws, tasksMaxPerPage, tasksPerPage)...).
		Returns(http.StatusOK, "OK", TaskPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	ws.Route(protect(ws.PATCH("/{task}").To(r.update).Operation("updateTask").
		Doc("Tick a to-do off (status done: the key's user is recorded as done_by) or open it again (status open).").
		Param(ws.PathParameter("task", "The to-do's public_id.").DataType("string")).
		Reads(TaskStatusUpdate{}).
		Returns(http.StatusOK, "The to-do as it now is.", Task{}).
		Returns(http.StatusBadRequest, "The body is not JSON.", ErrorBody{}).
		Returns(http.StatusNotFound, "No such to-do on this account.", ErrorBody{}).
		Returns(http.StatusRequestEntityTooLarge, "The body is too large.", ErrorBody{}).
		Returns(http.StatusUnsupportedMediaType, "The body is not sent as JSON.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "status is missing or not open or done.", ValidationErrorBody{}),
		Access{Permission: auth.InboxWrite, NeedsIntegrations: true}))
	c.Add(ws)
}

func (r tasksResource) list(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	status := queryEnum(req, fe, "status", "open", "open", "done", "all")
	paging := parsePaging(req, fe, tasksMaxPerPage, tasksPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	list, total, err := r.store.ListTasks(req.Request.Context(), principal(req).Account.ID, status, paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, TaskPage{pageOf(r.Server, req, paging, total, convertRows(list, taskAnswer))})
}

func (r tasksResource) update(req *restful.Request, resp *restful.Response) {
	var body TaskStatusUpdate
	if !readJSON(req, resp, &body) {
		return
	}
	fe := fieldErrors{}
	switch {
	case body.Status == "":
		fe.add("status", "The status field is required.")
	case !slices.Contains([]string{"open", "done"}, body.Status):
		fe.add("status", "The status must be one of: open, done.")
	}
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	id := req.PathParameter("task")
	p := principal(req)
	task, err := r.store.SetTaskStatus(req.Request.Context(), p.Account.ID, id, body.Status,
		p.User.ID, r.cfg.Clock.Now())
	r.respond(req, resp, "to-do", taskAnswer(task), err)
}

// TaskUser is who ticked off a to-do.
type TaskUser struct {
	PublicID string `json:"public_id" required:"true"`
	Name     string `json:"name" required:"true"`
}

// TaskCall is the call a to-do was found in.
type TaskCall struct {
	PublicID    string    `json:"public_id" required:"true"`
	FromE164    string    `json:"from_e164" required:"true"`
	ToE164      string    `json:"to_e164" required:"true"`
	NumberLabel string    `json:"number_label" required:"true"`
	StartedAt   time.Time `json:"started_at" required:"true"`
}

// Task is a follow-up to-do found in a call.
type Task struct {
	PublicID       string     `json:"public_id" required:"true"`
	Text           string     `json:"text" required:"true"`
	Status         string     `json:"status" required:"true" enum:"open,done"`
	CallbackE164   *string    `json:"callback_e164" required:"true"`
	Sentiment      *string    `json:"sentiment" required:"true" enum:"positive,neutral,negative"`
	Urgency        *string    `json:"urgency" required:"true" enum:"low,normal,high"`
	SummarySnippet *string    `json:"summary_snippet" required:"true"`
	CreatedAt      time.Time  `json:"created_at" required:"true"`
	UpdatedAt      time.Time  `json:"updated_at" required:"true"`
	CompletedAt    *time.Time `json:"completed_at" required:"true"`
	DoneBy         *TaskUser  `json:"done_by" required:"true" nullable:"true"`
	Call           *TaskCall  `json:"call" required:"true" nullable:"true"`
}

// taskAnswer shapes a to-do row as the API answers it.
func taskAnswer(r store.Task) Task {
	return Task{PublicID: r.PublicID, Text: r.Text, Status: r.Status, CallbackE164: r.CallbackE164,
		Sentiment: r.Sentiment, Urgency: r.Urgency, SummarySnippet: r.SummarySnippet, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, CompletedAt: r.CompletedAt,
		DoneBy: convertPtr(r.DoneBy, func(v store.TaskUser) TaskUser { return TaskUser(v) }),
		Call:   convertPtr(r.Call, func(v store.TaskCall) TaskCall { return TaskCall(v) })}
}
