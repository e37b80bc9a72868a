package apiserver

import (
	"net/http"
	"strconv"
	"strings"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Analytics windows in days (spec: Limits, "Analytics window").
var analyticsDays = []string{"7", "30", "90"}

const analyticsDefaultDays = "30"

type analyticsResource struct{ *Server }

func (r analyticsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/analytics").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.get).Operation("getAnalytics").
		Doc("Call analytics of the last 7, 30 or 90 calendar days (today included) in the account's time zone. "+
			"Calls screened out by call protection are counted only in summary.filtered; every other count is of business calls. "+
			"missed is no-answer, busy and failed calls; avg_forward_seconds is the mean over answered calls.").
		Param(enumParam(ws, "days", "Window in days: 7, 30 (default) or 90.", analyticsDays...).DataType("integer").DefaultValue(analyticsDefaultDays)).
		Param(ws.QueryParameter("number", "A live number's public_id: only calls to it (by_number still lists every number).").
			DataType("string")).
		Returns(http.StatusOK, "OK", Analytics{}).
		Returns(http.StatusNotFound, "number names none of the account's live numbers.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "A query parameter is invalid.", ValidationErrorBody{}),
		Access{Permission: auth.Read}))
	c.Add(ws)
}

func (r analyticsResource) get(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	fe := fieldErrors{}
	days, _ := strconv.Atoi(queryEnum(req, fe, "days", analyticsDefaultDays, analyticsDays...))
	// number is an id, not free text: one naming none of the account's live numbers is a 404
	// (spec: Errors), however long; one PostgreSQL cannot hold names none without asking it.
	number := strings.TrimSpace(req.QueryParameter("number"))
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	if !storableText(number) {
		notFound(resp, "number")
		return
	}
	a, err := r.store.CallAnalytics(req.Request.Context(), store.AnalyticsQuery{
		AccountID:      p.Account.ID,
		NumberPublicID: number,
		Days:           days,
		Location:       accountLocation(p.Account.TimeZone),
		Now:            r.cfg.Clock.Now(),
	})
	r.respond(req, resp, "number", analyticsAnswer(a), err)
}

// Analytics is GET /analytics.
type Analytics struct {
	Days    int              `json:"days" required:"true"`
	Summary AnalyticsSummary `json:"summary" required:"true"`
	// ByDay maps every date of the window (YYYY-MM-DD, account time zone) to its business calls.
	ByDay map[string]int `json:"by_day" required:"true" nullable:"false"`
	// ByHour counts business calls by hour of day (0 to 23, account time zone).
	ByHour    []int              `json:"by_hour" required:"true" nullable:"false" minItems:"24" maxItems:"24"`
	ByNumber  []AnalyticsNumber  `json:"by_number" required:"true" nullable:"false"`
	Sentiment AnalyticsSentiment `json:"sentiment" required:"true"`
}

// AnalyticsSummary counts the window's calls. Every count but filtered is over business calls
// (not screened out by call protection); filtered counts the screened-out ones.
type AnalyticsSummary struct {
	Total    int `json:"total" required:"true"`
	Filtered int `json:"filtered" required:"true"`
	Answered int `json:"answered" required:"true"`
	// Missed is no-answer, busy and failed calls.
	Missed    int `json:"missed" required:"true"`
	Voicemail int `json:"voicemail" required:"true"`
	Blocked   int `json:"blocked" required:"true"`
	// AnswerRate is round(answered * 100 / total); 0 without calls.
	AnswerRate int `json:"answer_rate" required:"true"`
	// AvgForwardSeconds is the rounded mean forward_seconds of answered calls; 0 without any.
	AvgForwardSeconds int `json:"avg_forward_seconds" required:"true"`
}

// AnalyticsNumber is one live number's business calls in the window.
type AnalyticsNumber struct {
	PublicID string `json:"public_id" required:"true"`
	E164     string `json:"e164" required:"true"`
	Label    string `json:"label" required:"true"`
	Total    int    `json:"total" required:"true"`
	Answered int    `json:"answered" required:"true"`
}

// AnalyticsSentiment counts the summary sentiment of the window's business calls.
type AnalyticsSentiment struct {
	Positive int `json:"positive" required:"true"`
	Neutral  int `json:"neutral" required:"true"`
	Negative int `json:"negative" required:"true"`
}

// analyticsAnswer shapes the store's analytics as the API answers them.
func analyticsAnswer(a store.Analytics) Analytics {
	return Analytics{Days: a.Days, Summary: AnalyticsSummary(a.Summary), ByDay: a.ByDay, ByHour: a.ByHour,
		ByNumber:  convertRows(a.ByNumber, func(n store.AnalyticsNumber) AnalyticsNumber { return AnalyticsNumber(n) }),
		Sentiment: AnalyticsSentiment(a.Sentiment)}
}
