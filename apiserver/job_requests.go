package apiserver

import (
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Page sizes of GET /job-requests (spec: Limits, job requests default 20).
const (
	jobRequestsMaxPerPage = 100
	jobRequestsPerPage    = 20
)

// JobRequestPage is GET /job-requests (a named type, so the description names its schema).
type JobRequestPage struct {
	Page[JobRequest]
}

// jobRequestStatuses maps the status filter to the stored statuses it selects (nil: every status).
var jobRequestStatuses = map[string][]string{
	"open":      {"new", "confirmed"},
	"new":       {"new"},
	"confirmed": {"confirmed"},
	"done":      {"done"},
	"declined":  {"declined"},
	"all":       nil,
}

type jobRequestsResource struct{ *Server }

func (r jobRequestsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/job-requests").Produces(restful.MIME_JSON)
	ws.Route(protect(inboxParams(ws.GET("").To(r.list).Operation("listJobRequests").
		Doc("Job requests picked out of message slips and calls, newest first.").
		Param(enumParam(ws, "status", "open (default: new and confirmed), new, confirmed, done, declined or all.",
			"open", "new", "confirmed", "done", "declined", "all").DefaultValue("open")),
		pageParams(ws, jobRequestsMaxPerPage, jobRequestsPerPage)...).
		Returns(http.StatusOK, "OK", JobRequestPage{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	c.Add(ws)
}

func (r jobRequestsResource) list(req *restful.Request, resp *restful.Response) {
	fe := fieldErrors{}
	status := queryEnum(req, fe, "status", "open", "open", "new", "confirmed", "done", "declined", "all")
	paging := parsePaging(req, fe, jobRequestsMaxPerPage, jobRequestsPerPage)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	list, total, err := r.store.ListJobRequests(req.Request.Context(), principal(req).Account.ID, jobRequestStatuses[status],
		paging.PerPage, paging.Offset())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, JobRequestPage{pageOf(r.Server, req, paging, total, convertRows(list, jobRequestAnswer))})
}

// JobRequest is a job picked out of a message slip or a call.
type JobRequest struct {
	PublicID      string    `json:"public_id" required:"true"`
	Status        string    `json:"status" required:"true" enum:"new,confirmed,done,declined"`
	CallerName    string    `json:"caller_name" required:"true"`
	CallerE164    string    `json:"caller_e164" required:"true"`
	ContactE164   *string   `json:"contact_e164" required:"true"`
	LineE164      *string   `json:"line_e164" required:"true"`
	LineLabel     *string   `json:"line_label" required:"true"`
	JobType       string    `json:"job_type" required:"true"`
	Description   string    `json:"description" required:"true"`
	Address       *string   `json:"address" required:"true"`
	Postcode      *string   `json:"postcode" required:"true"`
	PreferredWhen *string   `json:"preferred_when" required:"true"`
	PreferredDate *string   `json:"preferred_date" required:"true" format:"date"`
	CreatedAt     time.Time `json:"created_at" required:"true"`
}

// jobRequestAnswer shapes a job request row as the API answers it.
func jobRequestAnswer(r store.JobRequest) JobRequest {
	return JobRequest{PublicID: r.PublicID, Status: r.Status, CallerName: r.CallerName, CallerE164: r.CallerE164,
		ContactE164: r.ContactE164, LineE164: r.LineE164, LineLabel: r.LineLabel, JobType: r.JobType,
		Description: r.Description, Address: r.Address, Postcode: r.Postcode, PreferredWhen: r.PreferredWhen,
		PreferredDate: r.PreferredDate, CreatedAt: r.CreatedAt}
}
