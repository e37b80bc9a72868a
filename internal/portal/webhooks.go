package portal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/kubeapi"
	"github.com/switchboard-dev/switchboard/internal/period"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// The webhooks pages go through endpoints.Endpoints, the service behind /v1/webhooks: the same
// validation, five-endpoint limit, Integrations gate and per-account rate limits as the API.

type webhooksView struct {
	Endpoints []endpoints.View
	Events    []string
	Max       int
	CanAdd    bool
	// Why adding is refused when CanAdd is false and the limit is not the reason.
	AddRefusal string
	// Form holds what was typed into the add form when it is shown again with errors.
	Form webhookForm
}

// webhookForm is the add or edit form's values and its errors by field.
type webhookForm struct {
	Name   string
	URL    string
	Events map[string]bool
	Errors map[string][]string
	// Since is the recover form's value; SinceErrors its refusals, when it is shown again.
	Since       string
	SinceErrors []string
	// RateLimit is the rate-limit form's value; RateErrors its refusals, when it is shown again.
	RateLimit  string
	RateErrors []string
}

type webhookView struct {
	Endpoint   endpoints.View
	Events     []string
	Form       webhookForm
	Deliveries []endpoints.Delivery
	// Filter narrows the delivery log (query parameters event and status); DeliveryEvents and
	// DeliveryStatuses are its choices.
	Filter           endpoints.DeliveryFilter
	DeliveryEvents   []string
	DeliveryStatuses []string
	// Zone is the account's time zone, in which the recover form's time is read.
	Zone string
	// Secret is a new signing secret, shown this once (after creation or rotation).
	Secret string
}

// owner runs h for an owner; a member gets a 403 page (the API: webhooks are owner-only).
func (p *Portal) owner(h func(http.ResponseWriter, *http.Request, viewer)) func(http.ResponseWriter, *http.Request, viewer) {
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		if v.User.Role != "owner" {
			p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v,
				Message: "Only an owner of the account can manage its webhooks."})
			return
		}
		if p.cfg.Webhooks == nil {
			p.render(w, r, http.StatusServiceUnavailable, "message.html", page{Title: "Webhooks", Viewer: &v,
				Message: "Webhooks are not available on this server."})
			return
		}
		h(w, r, v)
	}
}

func (p *Portal) webhooksPage(w http.ResponseWriter, r *http.Request, v viewer, status int, form webhookForm, notice, errMsg string) {
	eps, err := p.cfg.Webhooks.List(r.Context(), v.Account.PublicID)
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	acct := endpoints.AccountOf(v.Account)
	view := &webhooksView{Events: endpoints.Subscribable(), Max: switchboardv1alpha1.MaxWebhookEndpointsPerAccount,
		CanAdd: endpoints.CanAdd(acct, len(eps)), Form: form}
	if reason := acct.IntegrationsRefusal(); reason != "" {
		view.AddRefusal = plans.RefusalMessages[reason]
	}
	for i := range eps {
		view.Endpoints = append(view.Endpoints, endpoints.ViewOf(&eps[i]))
	}
	p.render(w, r, status, "webhooks.html", page{Title: "Webhooks", Viewer: &v, Webhooks: view, Notice: notice, Error: errMsg})
}

var webhookNotices = map[string]string{"deleted": "The endpoint was removed; its deliveries have stopped."}

func (p *Portal) webhooks(w http.ResponseWriter, r *http.Request, v viewer) {
	p.webhooksPage(w, r, v, http.StatusOK, webhookForm{}, webhookNotices[r.URL.Query().Get("done")], "")
}

// readWebhookForm reads name, url and events from a posted add or edit form.
func readWebhookForm(r *http.Request) (webhookForm, endpoints.Input) {
	_ = r.ParseForm()
	f := webhookForm{Name: r.PostForm.Get("name"), URL: r.PostForm.Get("url"), Events: map[string]bool{}}
	evts := r.PostForm["event"]
	for _, e := range evts {
		f.Events[e] = true
	}
	if evts == nil {
		evts = []string{} // none ticked: the service says to choose one
	}
	return f, endpoints.Input{Name: &f.Name, URL: &f.URL, Events: &evts}
}

func (p *Portal) createWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	form, in := readWebhookForm(r)
	ep, secret, err := p.cfg.Webhooks.Create(r.Context(), endpoints.AccountOf(v.Account), in)
	var invalid *endpoints.InvalidError
	if errors.As(err, &invalid) {
		form.Errors = invalid.Fields
		p.webhooksPage(w, r, v, http.StatusUnprocessableEntity, form, "", "The endpoint was not added: correct the fields below.")
		return
	}
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.endpointPage(w, r, v, http.StatusCreated, ep.Name, secret, webhookForm{}, "The endpoint was added. Copy its signing secret now: it is shown only this once.", "")
}

// endpointPage shows one endpoint: its settings, actions and delivery log.
func (p *Portal) endpointPage(w http.ResponseWriter, r *http.Request, v viewer, status int, id, secret string, form webhookForm, notice, errMsg string) {
	ctx := r.Context()
	ep, err := p.cfg.Webhooks.Get(ctx, v.Account.PublicID, id)
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	ds, err := p.cfg.Webhooks.Deliveries(ctx, endpoints.AccountOf(v.Account), id)
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	q := r.URL.Query()
	filter := endpoints.DeliveryFilter{Event: choice(q, "event", "", endpoints.DeliveryEvents()), Status: choice(q, "status", "", endpoints.DeliveryStatuses)}
	view := &webhookView{Endpoint: endpoints.ViewOf(ep), Events: endpoints.Subscribable(), Deliveries: filter.Apply(ds), Secret: secret, Form: form,
		Filter: filter, DeliveryEvents: endpoints.DeliveryEvents(), DeliveryStatuses: endpoints.DeliveryStatuses}
	if form.Events == nil {
		view.Form = webhookForm{Name: view.Endpoint.Name, URL: view.Endpoint.URL, Events: map[string]bool{}}
		for _, e := range view.Endpoint.Events {
			view.Form.Events[e] = true
		}
	}
	view.Form.Since, view.Form.SinceErrors = form.Since, form.SinceErrors
	view.Zone = period.Location(v.Account.TimeZone).String()
	if form.RateErrors != nil {
		view.Form.RateLimit, view.Form.RateErrors = form.RateLimit, form.RateErrors
	} else if rl := view.Endpoint.RateLimit; rl != nil {
		view.Form.RateLimit = strconv.Itoa(*rl)
	}
	p.render(w, r, status, "webhook.html", page{Title: view.Endpoint.Name, Viewer: &v, Webhook: view, Notice: notice, Error: errMsg})
}

var endpointNotices = map[string]string{
	"saved":              "Saved.",
	"rate-limit-set":     "The rate limit was saved; deliveries held back by it wait and never count as failures.",
	"rate-limit-removed": "The rate limit was removed.",
	"paused":             "The endpoint is paused: events are recorded as cancelled and can be resent once it is active.",
	"active":             "The endpoint is active: events are delivered to it again.",
	"tested":             "A test event is on its way. Reload this page to see its delivery.",
	"resent":             "The delivery was queued again, with the same event id. Reload this page to see it.",
}

func (p *Portal) webhook(w http.ResponseWriter, r *http.Request, v viewer) {
	p.endpointPage(w, r, v, http.StatusOK, r.PathValue("endpoint"), "", webhookForm{}, endpointNotices[r.URL.Query().Get("done")], "")
}

func (p *Portal) updateWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("endpoint")
	form, in := readWebhookForm(r)
	_, _, err := p.cfg.Webhooks.Update(r.Context(), v.Account.PublicID, id, in)
	var invalid *endpoints.InvalidError
	if errors.As(err, &invalid) {
		form.Errors = invalid.Fields
		p.endpointPage(w, r, v, http.StatusUnprocessableEntity, id, "", form, "", "The changes were not saved: correct the fields below.")
		return
	}
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.redirectEndpoint(w, r, id, "saved")
}

// setWebhookStatus pauses or resumes (active also switches on an endpoint switched off for failing).
func (p *Portal) setWebhookStatus(w http.ResponseWriter, r *http.Request, v viewer) {
	id, status := r.PathValue("endpoint"), r.PostFormValue("status")
	if _, _, err := p.cfg.Webhooks.Update(r.Context(), v.Account.PublicID, id, endpoints.Input{Status: &status}); err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.redirectEndpoint(w, r, id, status)
}

// setWebhookRateLimit sets the endpoint's rate limit, or removes it when the field is empty,
// through the service's update (the API's PATCH rate_limit).
func (p *Portal) setWebhookRateLimit(w http.ResponseWriter, r *http.Request, v viewer) {
	id, raw := r.PathValue("endpoint"), strings.TrimSpace(r.PostFormValue("rate_limit"))
	in := endpoints.Input{SetRateLimit: true}
	err := error(&endpoints.InvalidError{Fields: map[string][]string{"rate_limit": {endpoints.RateLimitInvalid}}})
	if raw == "" {
		_, _, err = p.cfg.Webhooks.Update(r.Context(), v.Account.PublicID, id, in)
	} else if n, convErr := strconv.Atoi(raw); convErr == nil {
		in.RateLimit = &n
		_, _, err = p.cfg.Webhooks.Update(r.Context(), v.Account.PublicID, id, in)
	}
	var invalid *endpoints.InvalidError
	if errors.As(err, &invalid) {
		form := webhookForm{RateLimit: raw, RateErrors: invalid.Fields["rate_limit"]}
		p.endpointPage(w, r, v, http.StatusUnprocessableEntity, id, "", form, "", "The rate limit was not saved: correct it below.")
		return
	}
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	done := "rate-limit-set"
	if raw == "" {
		done = "rate-limit-removed"
	}
	p.redirectEndpoint(w, r, id, done)
}

// sinceLayout is the value of a datetime-local input.
const sinceLayout = "2006-01-02T15:04"

// recoverWebhook sends again what failed or was cancelled since a time typed in the account's
// time zone, through the service's Recover (POST /v1/webhooks/{endpoint}/recover).
func (p *Portal) recoverWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	id, raw := r.PathValue("endpoint"), strings.TrimSpace(r.PostFormValue("since"))
	var since *time.Time
	loc := period.Location(v.Account.TimeZone)
	t, err := time.ParseInLocation(sinceLayout, raw, loc)
	if err != nil {
		t, err = time.ParseInLocation(sinceLayout+":05", raw, loc) // a browser may add seconds
	}
	if err == nil {
		since = &t
	} else if raw != "" {
		form := webhookForm{Since: raw, SinceErrors: []string{"Give a date and time, such as 2026-03-01T09:30."}}
		p.endpointPage(w, r, v, http.StatusUnprocessableEntity, id, "", form, "", "Nothing was recovered: correct the time below.")
		return
	}
	n, err := p.cfg.Webhooks.Recover(r.Context(), endpoints.AccountOf(v.Account), id, since, nil)
	var invalid *endpoints.InvalidError
	if errors.As(err, &invalid) {
		form := webhookForm{Since: raw, SinceErrors: invalid.Fields["since"]}
		p.endpointPage(w, r, v, http.StatusUnprocessableEntity, id, "", form, "", "Nothing was recovered: correct the time below.")
		return
	}
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	notice := fmt.Sprintf("%d deliveries were queued again, with their event ids. Reload this page to see them.", n)
	if n == 1 {
		notice = "1 delivery was queued again, with its event id. Reload this page to see it."
	}
	p.endpointPage(w, r, v, http.StatusOK, id, "", webhookForm{Since: raw}, notice, "")
}

func (p *Portal) deleteWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := p.cfg.Webhooks.Delete(r.Context(), v.Account.PublicID, r.PathValue("endpoint")); err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	http.Redirect(w, r, "/portal/webhooks?done=deleted", http.StatusSeeOther)
}

func (p *Portal) rotateWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("endpoint")
	_, secret, err := p.cfg.Webhooks.Rotate(r.Context(), v.Account.PublicID, id)
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.endpointPage(w, r, v, http.StatusOK, id, secret, webhookForm{},
		"A new signing secret was issued; later attempts are signed with it. Copy it now: it is shown only this once.", "")
}

func (p *Portal) testWebhook(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("endpoint")
	if err := p.cfg.Webhooks.Test(r.Context(), endpoints.AccountOf(v.Account), id, nil); err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.redirectEndpoint(w, r, id, "tested")
}

func (p *Portal) resendDelivery(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("endpoint")
	if err := p.cfg.Webhooks.Resend(r.Context(), endpoints.AccountOf(v.Account), id, r.PathValue("event"), nil); err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	p.redirectEndpoint(w, r, id, "resent")
}

// deliveryView is one event's page: its deliveries to the endpoint and the payload they post.
type deliveryView struct {
	Endpoint endpoints.View
	Event    endpoints.EventDeliveries
	// Payload is the event's body indented for reading; empty once the outbox no longer keeps it.
	Payload string
}

func (p *Portal) delivery(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	ep, err := p.cfg.Webhooks.Get(ctx, v.Account.PublicID, r.PathValue("endpoint"))
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	ev, err := p.cfg.Webhooks.Event(ctx, endpoints.AccountOf(v.Account), ep.Name, r.PathValue("event"))
	if err != nil {
		p.webhookFail(w, r, v, err)
		return
	}
	view := &deliveryView{Endpoint: endpoints.ViewOf(ep), Event: ev, Payload: indentJSON(ev.Payload)}
	p.render(w, r, http.StatusOK, "webhook-delivery.html", page{Title: ev.Event + " delivery", Viewer: &v, Delivery: view})
}

// indentJSON pretty-prints a JSON body; a body that is not JSON is shown as it is.
func indentJSON(body []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return string(body)
	}
	return buf.String()
}

// catalogueEvent is an event an endpoint can receive, when it is sent and an example body.
type catalogueEvent struct {
	Name, Description, Example string
}

// eventCatalogue lists the events the service sends, each with an example body built by the
// code that builds real events.
func (p *Portal) eventCatalogue(w http.ResponseWriter, r *http.Request, v viewer) {
	var list []catalogueEvent
	for _, name := range endpoints.DeliveryEvents() {
		body, err := events.Example(p.cfg.EventLinks, name, v.Account.Name, p.cfg.Clock.Now())
		if err != nil {
			p.fail(w, r, err)
			return
		}
		list = append(list, catalogueEvent{Name: name, Description: events.Descriptions[name], Example: indentJSON(body)})
	}
	p.render(w, r, http.StatusOK, "webhook-events.html", page{Title: "Webhook events", Viewer: &v, Catalogue: list})
}

func (p *Portal) redirectEndpoint(w http.ResponseWriter, r *http.Request, id, done string) {
	http.Redirect(w, r, "/portal/webhooks/"+id+"?done="+done, http.StatusSeeOther)
}

// webhookFail shows a refusal of the webhooks service as a page saying why: a missing or
// foreign id is 404, the Integrations gate 403, a state the endpoint refuses (the limit, a
// paused endpoint) 409 on the endpoint's page, too many requests 429.
func (p *Portal) webhookFail(w http.ResponseWriter, r *http.Request, v viewer, err error) {
	var conflict *endpoints.ConflictError
	var invalid *endpoints.InvalidError
	var addon *endpoints.AddonRefusedError
	var limited *endpoints.RateLimitedError
	switch {
	case errors.Is(err, endpoints.ErrEndpointNotFound), errors.Is(err, endpoints.ErrDeliveryNotFound):
		p.render(w, r, http.StatusNotFound, "message.html", page{Title: "Not found", Viewer: &v, Message: "There is nothing at this address."})
	case errors.As(err, &addon):
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: plans.RefusalMessages[addon.Reason]})
	case errors.As(err, &limited):
		secs := int(limited.RetryAfter.Seconds()) + 1
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		p.render(w, r, http.StatusTooManyRequests, "message.html", page{Title: "Too many requests", Viewer: &v,
			Message: fmt.Sprintf("Too many of these requests for this account just now. Try again in %d seconds.", secs)})
	case errors.As(err, &conflict), errors.As(err, &invalid):
		status, msg := http.StatusConflict, ""
		if conflict != nil {
			msg = conflict.Message
		} else {
			status, msg = http.StatusUnprocessableEntity, invalidMessage(invalid)
		}
		if id := r.PathValue("endpoint"); id != "" {
			p.endpointPage(w, r, v, status, id, "", webhookForm{}, "", msg)
			return
		}
		p.webhooksPage(w, r, v, status, webhookForm{}, "", msg)
	case kubeapi.Unavailable(err):
		unavailable(w)
	default:
		p.fail(w, r, err)
	}
}

// invalidMessage joins an InvalidError's messages, field by field.
func invalidMessage(e *endpoints.InvalidError) string {
	fields := make([]string, 0, len(e.Fields))
	for f := range e.Fields {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var msgs []string
	for _, f := range fields {
		msgs = append(msgs, e.Fields[f]...)
	}
	return strings.Join(msgs, " ")
}
