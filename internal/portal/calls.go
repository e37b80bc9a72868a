package portal

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/period"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// callsPerPage is the calls list's page size (the API's default page).
const callsPerPage = 25

// callFilters are the calls list's filters, as the query string carries them.
type callFilters struct {
	Activity, Search, Period, Status, Sentiment, Urgency string
}

type callsView struct {
	Calls   []store.Call
	Filters callFilters
	// The choices of each filter.
	Activities, Periods, Statuses, Sentiments, Urgencies []string
	Page, Pages, Total                                   int
	Prev, Next                                           string
}

// choice is q's value of name when it is one of allowed, else def (an unknown value is ignored
// rather than refused: these are links and forms of the portal's own).
func choice(q url.Values, name, def string, allowed []string) string {
	if v := q.Get(name); slices.Contains(allowed, v) {
		return v
	}
	return def
}

// calls lists the account's calls with the API's filters (GET /v1/calls: store.ListCalls with
// the same CallFilter), newest first, a page at a time.
func (p *Portal) calls(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	f := callFilters{
		Activity:  choice(q, "activity", store.CallActivities[0], store.CallActivities),
		Search:    strings.TrimSpace(q.Get("search")),
		Period:    choice(q, "period", "all", period.Presets),
		Status:    choice(q, "status", "", store.CallDispositions),
		Sentiment: choice(q, "sentiment", "", store.CallSentiments),
		Urgency:   choice(q, "urgency", "", store.CallUrgencies),
	}
	if len(f.Search) > 100 {
		f.Search = f.Search[:100]
	}
	pageNo, err := strconv.Atoi(q.Get("page"))
	if err != nil || pageNo < 1 {
		pageNo = 1
	}
	from, to := period.Window(f.Period, period.Location(v.Account.TimeZone), p.cfg.Clock.Now())
	calls, total, err := p.store.ListCalls(r.Context(), v.Account.ID, store.CallFilter{Activity: f.Activity, Search: f.Search,
		SearchDigits: store.CallSearchDigits(f.Search), From: from, To: to, Status: f.Status, Sentiment: f.Sentiment, Urgency: f.Urgency,
		Limit: callsPerPage, Offset: (pageNo - 1) * callsPerPage})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &callsView{Calls: calls, Filters: f, Activities: store.CallActivities, Periods: period.Presets,
		Statuses: store.CallDispositions, Sentiments: store.CallSentiments, Urgencies: store.CallUrgencies,
		Page: pageNo, Total: total, Pages: max(1, (total+callsPerPage-1)/callsPerPage)}
	link := func(n int) string {
		l := url.Values{}
		for k, val := range map[string]string{"activity": f.Activity, "search": f.Search, "period": f.Period, "status": f.Status,
			"sentiment": f.Sentiment, "urgency": f.Urgency} {
			if val != "" {
				l.Set(k, val)
			}
		}
		l.Set("page", strconv.Itoa(n))
		return "/portal/calls?" + l.Encode()
	}
	if pageNo > 1 {
		view.Prev = link(pageNo - 1)
	}
	if pageNo < view.Pages {
		view.Next = link(pageNo + 1)
	}
	p.render(w, r, http.StatusOK, "calls.html", page{Title: "Calls", Viewer: &v, Calls: view})
}

type callView struct {
	Call store.Call
	// CallerName is the caller's name when it is more than their number; Route where the call went.
	CallerName string
	Route      string
	Transcript *store.Transcript
	// SummaryWhy and SummaryTodo say why there is no summary and what to do; empty with one.
	SummaryWhy, SummaryTodo string
	// AudioURL is the signed link of the call's recording (as the API's stream-url gives it).
	AudioURL string
	// Recording is the call's recording; MayTranscribe: the viewer may start a transcription.
	Recording     *store.Recording
	MayTranscribe bool
	// Quote is the price shown before a transcription is started.
	Quote *transcription.Quote
}

// call is the page links.dashboard points at: the call of the signed-in user's account, with
// its summary and transcript. Another account's call is a 404, as in the API.
func (p *Portal) call(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	c, err := p.store.GetCall(ctx, v.Account.ID, r.PathValue("call"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	answer, err := p.store.GetCallAnswer(ctx, v.Account.ID, c.PublicID)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &callView{Call: c, CallerName: callerName(c.CallerDisplayName, c.From), Route: routeLine(c.Disposition, answer, c.ForwardSeconds)}
	if c.RecordingPublicID != nil {
		rec, err := p.store.GetRecording(ctx, v.Account.ID, *c.RecordingPublicID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			p.fail(w, r, err)
			return
		}
		if err == nil {
			view.Recording = &rec
			view.MayTranscribe = p.cfg.Transcriptions != nil && (v.User.Role == "owner" || v.User.CanTranscribe)
			if len(p.cfg.LinkSigningKey) > 0 {
				view.AudioURL = links.Recording(p.cfg.BaseURL, p.cfg.LinkSigningKey, rec.PublicID, p.cfg.Clock.Now().Add(links.RecordingTTL).Truncate(time.Second))
			}
			t, err := p.store.GetTranscript(ctx, v.Account.ID, rec.ID)
			switch {
			case err == nil:
				view.Transcript = &t
				view.SummaryWhy, view.SummaryTodo = summaryNote(t, view.MayTranscribe)
			case !errors.Is(err, store.ErrNotFound):
				p.fail(w, r, err)
				return
			}
		}
	}
	p.render(w, r, http.StatusOK, "call.html", page{Title: "Call from " + callerLabel(c), Viewer: &v, Call: view,
		Notice: callNotices[r.URL.Query().Get("done")]})
}

var callNotices = map[string]string{"transcribing": "The transcription has started; its transcript and summary appear here when ready."}

// transcribeQuote shows what transcribing the call's recording costs (the API's estimate),
// with the button that starts it.
func (p *Portal) transcribeQuote(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	c, err := p.store.GetCall(ctx, v.Account.ID, r.PathValue("call"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if c.RecordingPublicID == nil || p.cfg.Transcriptions == nil {
		p.render(w, r, http.StatusUnprocessableEntity, "message.html", page{Title: "Nothing to transcribe", Viewer: &v,
			Message: "This call has no recording to transcribe."})
		return
	}
	rec, err := p.store.GetRecording(ctx, v.Account.ID, *c.RecordingPublicID)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	q, err := p.cfg.Transcriptions.Estimate(ctx, v.Account, rec)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "transcribe.html", page{Title: "Transcribe the call from " + callerLabel(c), Viewer: &v,
		Call: &callView{Call: c, Recording: &rec, Quote: &q}})
}

// transcribe starts the transcription through the same service as the API's
// POST /v1/calls/{call}/transcribe: 403 and 402 become pages saying why.
func (p *Portal) transcribe(w http.ResponseWriter, r *http.Request, v viewer) {
	if p.cfg.Transcriptions == nil {
		p.render(w, r, http.StatusServiceUnavailable, "message.html", page{Title: "Transcription", Viewer: &v,
			Message: "Transcription is not available on this server."})
		return
	}
	id := r.PathValue("call")
	res, err := p.cfg.Transcriptions.Request(r.Context(), v.User, v.Account, id, nil)
	var refused *transcription.RefusedError
	switch {
	case errors.As(err, &refused):
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: refused.Message})
		return
	case errors.Is(err, store.ErrNoRecording):
		p.render(w, r, http.StatusUnprocessableEntity, "message.html", page{Title: "Nothing to transcribe", Viewer: &v,
			Message: "This call has no recording to transcribe."})
		return
	case errors.Is(err, store.ErrTranscriptionUnavailable):
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v,
			Message: "The account's plan does not include transcription."})
		return
	case err != nil:
		p.fail(w, r, err)
		return
	}
	if res.Outcome == store.TranscribeRefused {
		p.render(w, r, http.StatusPaymentRequired, "message.html", page{Title: "Not enough balance", Viewer: &v,
			Message: billing.RefusalMessage(res.Estimate, res.Price)})
		return
	}
	http.Redirect(w, r, "/portal/calls/"+url.PathEscape(id)+"?done=transcribing", http.StatusSeeOther)
}

func callerLabel(c store.Call) string {
	if name := callerName(c.CallerDisplayName, c.From); name != "" {
		return name
	}
	return c.From
}
