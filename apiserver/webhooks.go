package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// WebhooksConfig configures the webhook operations. They read and write WebhookEndpoint and
// WebhookDelivery resources (Config.Kube) in the account's namespace; the API keeps no copy,
// so a change made with kubectl shows here and the other way round.
type WebhooksConfig struct {
	// Service is the webhooks service shared with the portal; nil: one is built on Config.Kube,
	// Reader and URLPolicy.
	Service *endpoints.Endpoints
	// Reader reads past the manager's cache (read-after-write for the caller); default Config.Kube.
	Reader client.Reader
	// URLPolicy checks endpoint addresses (https, public internet only).
	URLPolicy send.URLPolicy
}

// Webhooks adds the /v1/webhooks operations to New's container: New(cfg, st, Webhooks(wc)).
// They need Config.Kube.
func Webhooks(wc WebhooksConfig) func(*Server) Resource {
	return func(s *Server) Resource {
		if wc.Service != nil {
			return webhooksResource{Server: s, svc: wc.Service}
		}
		if wc.Reader == nil {
			wc.Reader = s.cfg.Kube
		}
		return webhooksResource{Server: s, svc: &endpoints.Endpoints{Kube: s.cfg.Kube, Reader: wc.Reader, Store: s.store,
			Clock: s.cfg.Clock, URLPolicy: wc.URLPolicy}}
	}
}

// Webhook is a webhook endpoint. public_id is the WebhookEndpoint resource's name.
type Webhook struct {
	PublicID     string            `json:"public_id" required:"true"`
	Name         string            `json:"name" required:"true"`
	URL          string            `json:"url" required:"true"`
	Events       webhookEventNames `json:"events" required:"true"`
	Status       string            `json:"status" required:"true" enum:"active,paused"`
	FailingSince *time.Time        `json:"failing_since" required:"true"`
	// RateLimit is the most deliveries sent to the endpoint per second, across the service;
	// null when there is no such cap.
	RateLimit *int `json:"rate_limit" required:"true" minimum:"1" maximum:"1000" description:"The most deliveries sent to the endpoint per second, across the service; null when there is no cap."`
}

// webhookEventNames are events an endpoint subscribes to; the description lists the values
// (SubscribableEvents) as the items' enum, which a tag cannot name.
type webhookEventNames []string

// InlineJSONSchema keeps the list inline in each schema that has one (jsonschema.SchemaInliner).
func (webhookEventNames) InlineJSONSchema() {}

// PrepareJSONSchema names the values (jsonschema.Preparer).
func (webhookEventNames) PrepareJSONSchema(s *jsonschema.Schema) error {
	s.ItemsEns().SchemaOrBoolEns().TypeObjectEns().WithEnum(toAny(eventNames(false))...)
	return nil
}

// WebhookList is GET /webhooks.
type WebhookList struct {
	// CanAdd: under the endpoint limit and the account has Integrations (adding needs it).
	CanAdd    bool              `json:"can_add" required:"true"`
	Events    webhookEventNames `json:"events" required:"true"`
	Max       int               `json:"max" required:"true"`
	Endpoints []Webhook         `json:"endpoints" required:"true"`
}

// WebhookWithSecret answers POST /webhooks and rotate: the secret is shown only here.
type WebhookWithSecret struct {
	Endpoint Webhook `json:"endpoint" required:"true"`
	Secret   string  `json:"secret" required:"true"`
}

// WebhookUpdated answers PATCH /webhooks/{endpoint}.
type WebhookUpdated struct {
	Endpoint Webhook `json:"endpoint" required:"true"`
}

// WebhookDeliveryRecord is one delivery of an event to an endpoint.
type WebhookDeliveryRecord struct {
	Event   string `json:"event" required:"true"`
	EventID string `json:"event_id" required:"true" format:"uuid"`
	Status  string `json:"status" required:"true" enum:"pending,retrying,succeeded,failed,cancelled"`
	// Attempts sent so far.
	Attempts int `json:"attempts" required:"true"`
	// ResponseCode of the last attempt; 0 when no answer arrived (or none was sent).
	ResponseCode int `json:"response_code" required:"true"`
	// LastError of the last attempt; empty when none failed.
	LastError     string     `json:"last_error" required:"true"`
	CreatedAt     time.Time  `json:"created_at" required:"true"`
	NextAttemptAt *time.Time `json:"next_attempt_at" required:"true"`
}

// WebhookDeliveryList is GET /webhooks/{endpoint}/deliveries.
type WebhookDeliveryList struct {
	Deliveries []WebhookDeliveryRecord `json:"deliveries" required:"true"`
}

// WebhookQueued answers test and resend.
type WebhookQueued struct {
	Queued bool `json:"queued" required:"true"`
}

// WebhookRecover is the body of POST /webhooks/{endpoint}/recover.
type WebhookRecover struct {
	Since *string `json:"since" required:"true" nullable:"false" format:"date-time" description:"The oldest delivery to send again (by when it was made); within the last 30 days, not in the future."`
}

// WebhookRecovered answers POST /webhooks/{endpoint}/recover.
type WebhookRecovered struct {
	// Queued is how many fresh deliveries were queued (each event once).
	Queued int `json:"queued" required:"true" minimum:"0"`
}

// WebhookCreate is the body of POST /webhooks.
type WebhookCreate struct {
	Name   *string            `json:"name" required:"true" nullable:"false" minLength:"1" maxLength:"100"`
	URL    *string            `json:"url" required:"true" nullable:"false" format:"uri" description:"An https:// address on the public internet."`
	Events *webhookEventNames `json:"events" required:"true" nullable:"false" minItems:"1"`
	// RateLimit caps the deliveries sent per second; deliveries held back by it wait, and
	// never count as failures. Absent or null: no cap.
	RateLimit *int `json:"rate_limit,omitempty" nullable:"true" minimum:"1" maximum:"1000" description:"Deliveries per second at most, across the service (1 to 1000); deliveries held back wait and never count as failures. Absent or null: no cap."`
}

// WebhookChange is the body of PATCH /webhooks/{endpoint}; every field is optional.
type WebhookChange struct {
	Name   *string            `json:"name,omitempty" nullable:"false" minLength:"1" maxLength:"100"`
	URL    *string            `json:"url,omitempty" nullable:"false" format:"uri" description:"An https:// address on the public internet."`
	Events *webhookEventNames `json:"events,omitempty" nullable:"false" minItems:"1"`
	Status *string            `json:"status,omitempty" nullable:"false" enum:"active,paused"`
	// RateLimit: a number sets the cap, null removes it, absent leaves it as it is.
	RateLimit optionalRateLimit `json:"rate_limit,omitempty"`
}

// optionalRateLimit is a PATCH field that may be absent (unchanged), null (removed) or a
// number (set).
type optionalRateLimit struct {
	set   bool
	value *int
}

// UnmarshalJSON is called only when the field is present.
func (o *optionalRateLimit) UnmarshalJSON(b []byte) error {
	o.set = true
	if string(b) == "null" {
		o.value = nil
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err // a type error: the decoder names the field
	}
	o.value = &v
	return nil
}

// JSONSchema describes the field as its clients see it: an integer in range, or null.
func (optionalRateLimit) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Integer)
	s.AddType(jsonschema.Null)
	s.WithMinimum(endpoints.MinRateLimit).WithMaximum(endpoints.MaxRateLimit)
	s.WithDescription("Deliveries per second at most, across the service (1 to 1000); null removes the cap; absent leaves it as it is.")
	return s, nil
}

// metaAccountLimit is a route's own limit per account and minute (an int), for the description.
const metaAccountLimit = "switchboard.account-limit"

// accountLimited declares that the webhook service limits the operation op per account
// (endpoints.PerMinute), so the description states the limit the service applies.
func accountLimited(rb *restful.RouteBuilder, op string) *restful.RouteBuilder {
	return rb.Metadata(metaAccountLimit, endpoints.PerMinute[op])
}

type webhooksResource struct {
	*Server
	svc *endpoints.Endpoints
}

func (r webhooksResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/webhooks").Produces(restful.MIME_JSON)
	endpointParam := idParam(ws, "endpoint", "The endpoint's public_id.", kubeNamePattern, kubeNameMaxLength)
	eventParam := idParam(ws, "eventId", "The delivery's event_id (a UUID).", uuidPattern, uuidMaxLength).DataFormat("uuid")
	manageAccess := Access{Permission: auth.WebhooksManage, OwnerOnly: true}
	// The service applies the gate (and the rate limits), so the portal gets the same rule.
	gated := Access{Permission: auth.WebhooksManage, OwnerOnly: true, NeedsIntegrations: true, IntegrationsInService: true}
	withBody := func(rb *restful.RouteBuilder) *restful.RouteBuilder {
		return rb.Consumes(restful.MIME_JSON).
			Returns(http.StatusBadRequest, "The body is empty or not valid JSON.", ErrorBody{}).
			Returns(http.StatusRequestEntityTooLarge, "The body is too large.", ErrorBody{}).
			Returns(http.StatusUnsupportedMediaType, "The body is not sent as application/json.", ErrorBody{}).
			Returns(http.StatusUnprocessableEntity, "A field is missing or invalid.", ValidationErrorBody{})
	}
	noEndpoint := "No such endpoint on this account."

	ws.Route(protect(ws.GET("").To(r.list).Operation("listWebhooks").
		Doc("The account's webhook endpoints, the events they can receive and whether another can be added.").
		Returns(http.StatusOK, "OK", WebhookList{}), manageAccess))
	ws.Route(protect(withBody(r.idempotentInKube(accountLimited(ws.POST(""), endpoints.OpAdd), r.create).Operation("createWebhook").
		Doc("Adds an endpoint (at most 5). The signing secret is returned only here.").
		Reads(WebhookCreate{}).
		Returns(http.StatusCreated, "The endpoint and its signing secret.", WebhookWithSecret{}).
		Returns(http.StatusConflict, "The account already has the most endpoints allowed.", ErrorBody{})), gated))
	ws.Route(protect(withBody(ws.PATCH("/{endpoint}").To(r.update).Operation("updateWebhook").Param(endpointParam).
		Doc("Changes name, url, events or status (active or paused). Setting active also switches on an endpoint switched off for failing.").
		Reads(WebhookChange{}).
		Returns(http.StatusOK, "The endpoint as saved.", WebhookUpdated{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{})), manageAccess))
	ws.Route(protect(ws.DELETE("/{endpoint}").To(r.delete).Operation("deleteWebhook").Param(endpointParam).
		Doc("Removes the endpoint; its deliveries stop at once, including an attempt in flight.").
		Returns(http.StatusNoContent, "Removed.", nil).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manageAccess))
	ws.Route(protect(r.idempotentInKube(ws.POST("/{endpoint}/rotate"), r.rotate).Operation("rotateWebhookSecret").Param(endpointParam).
		Doc("Issues a new signing secret, returned only here; later attempts are signed with it.").
		Returns(http.StatusOK, "The endpoint and its new signing secret.", WebhookWithSecret{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manageAccess))
	ws.Route(protect(r.idempotent(accountLimited(ws.POST("/{endpoint}/test"), endpoints.OpTest), r.test).Operation("testWebhook").Param(endpointParam).
		Doc("Queues a signed test event to an active endpoint.").
		Returns(http.StatusAccepted, "Queued.", WebhookQueued{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}).
		Returns(http.StatusConflict, "The endpoint is paused or switched off.", ErrorBody{}), gated))
	ws.Route(protect(ws.GET("/{endpoint}/deliveries").To(r.deliveries).Operation("listWebhookDeliveries").Param(endpointParam).
		Doc("The latest 100 deliveries of the last 30 days, newest first.").
		Returns(http.StatusOK, "OK", WebhookDeliveryList{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manageAccess))
	ws.Route(protect(r.idempotent(accountLimited(ws.POST("/{endpoint}/deliveries/{eventId}/resend"), endpoints.OpResend), r.resend).Operation("resendWebhookDelivery").
		Param(endpointParam).Param(eventParam).
		Doc("Sends a failed or cancelled delivery again as a fresh delivery with the same event id.").
		Returns(http.StatusAccepted, "Queued.", WebhookQueued{}).
		Returns(http.StatusNotFound, "No such endpoint, or no delivery of that event to it.", ErrorBody{}).
		Returns(http.StatusConflict, "The delivery is neither failed nor cancelled, or the endpoint is not active.", ErrorBody{}), gated))
	ws.Route(protect(withBody(r.idempotent(accountLimited(ws.POST("/{endpoint}/recover"), endpoints.OpRecover), r.recover).Operation("recoverWebhookDeliveries").
		Param(endpointParam).
		Doc("Sends again, as fresh deliveries with the same event ids, every event whose latest delivery to the endpoint since `since` "+
			"ended failed or cancelled, each event once; events already being delivered again are left out, so a repeat adds nothing twice. "+
			"At most "+strconv.Itoa(endpoints.MaxRecoveredPerCall)+" a call: call again for the rest.").
		Reads(WebhookRecover{}).
		Returns(http.StatusAccepted, "Queued; queued says how many.", WebhookRecovered{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}).
		Returns(http.StatusConflict, "The endpoint is paused or switched off.", ErrorBody{})), gated))
	c.Add(ws)
}

// ---- operations: request -> endpoints.Endpoints -> answer ----

func (r webhooksResource) list(req *restful.Request, resp *restful.Response) {
	acct := account(req)
	eps, err := r.svc.List(req.Request.Context(), acct.PublicID)
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	// Adding needs Integrations too, so can_add is false while POST /webhooks would be refused.
	out := WebhookList{CanAdd: endpoints.CanAdd(acct, len(eps)), Events: endpoints.Subscribable(),
		Max: switchboardv1alpha1.MaxWebhookEndpointsPerAccount, Endpoints: make([]Webhook, 0, len(eps))}
	for i := range eps {
		out.Endpoints = append(out.Endpoints, webhookView(&eps[i]))
	}
	writeJSON(resp, http.StatusOK, out)
}

func (r webhooksResource) create(req *restful.Request, resp *restful.Response) {
	var in WebhookCreate
	if !readJSON(req, resp, &in) {
		return
	}
	ep, secret, err := r.svc.Create(req.Request.Context(), account(req), endpoints.Input{Name: in.Name, URL: in.URL, Events: (*[]string)(in.Events),
		RateLimit: in.RateLimit, SetRateLimit: true})
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusCreated, WebhookWithSecret{Endpoint: webhookView(ep), Secret: secret})
}

func (r webhooksResource) update(req *restful.Request, resp *restful.Response) {
	var in WebhookChange
	if !readJSON(req, resp, &in) {
		return
	}
	ep, switchedOn, err := r.svc.Update(req.Request.Context(), principal(req).Account.PublicID, req.PathParameter("endpoint"),
		endpoints.Input{Name: in.Name, URL: in.URL, Events: (*[]string)(in.Events), Status: in.Status, RateLimit: in.RateLimit.value, SetRateLimit: in.RateLimit.set})
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	view := webhookView(ep)
	if switchedOn {
		view.FailingSince = nil // the controller clears it as it switches the endpoint on
	}
	writeJSON(resp, http.StatusOK, WebhookUpdated{Endpoint: view})
}

func (r webhooksResource) delete(req *restful.Request, resp *restful.Response) {
	if err := r.svc.Delete(req.Request.Context(), principal(req).Account.PublicID, req.PathParameter("endpoint")); err != nil {
		r.webhookError(req, resp, err)
		return
	}
	resp.WriteHeader(http.StatusNoContent)
}

func (r webhooksResource) rotate(req *restful.Request, resp *restful.Response) {
	ep, secret, err := r.svc.Rotate(req.Request.Context(), principal(req).Account.PublicID, req.PathParameter("endpoint"))
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, WebhookWithSecret{Endpoint: webhookView(ep), Secret: secret})
}

func (r webhooksResource) test(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	if err := r.svc.Test(req.Request.Context(), account(req), req.PathParameter("endpoint"), claim); err != nil {
		r.webhookError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, WebhookQueued{Queued: true})
}

func (r webhooksResource) deliveries(req *restful.Request, resp *restful.Response) {
	ds, err := r.svc.Deliveries(req.Request.Context(), account(req), req.PathParameter("endpoint"))
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	out := WebhookDeliveryList{Deliveries: make([]WebhookDeliveryRecord, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = WebhookDeliveryRecord{Event: d.Event, EventID: d.EventID, Status: string(d.Status), Attempts: d.Attempts,
			ResponseCode: d.ResponseCode, LastError: d.LastError, CreatedAt: d.CreatedAt, NextAttemptAt: d.NextAttemptAt}
	}
	writeJSON(resp, http.StatusOK, out)
}

func (r webhooksResource) resend(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	err := r.svc.Resend(req.Request.Context(), account(req), req.PathParameter("endpoint"), req.PathParameter("eventId"), claim)
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, WebhookQueued{Queued: true})
}

func (r webhooksResource) recover(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim) {
	var in WebhookRecover
	if !readJSON(req, resp, &in) {
		return
	}
	var since *time.Time
	if in.Since != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.Since)
		if err != nil {
			writeValidation(resp, fieldErrors{"since": {"Must be an RFC 3339 date-time, such as 2026-03-01T00:00:00Z."}})
			return
		}
		since = &t
	}
	n, err := r.svc.Recover(req.Request.Context(), account(req), req.PathParameter("endpoint"), since, claim)
	if err != nil {
		r.webhookError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, WebhookRecovered{Queued: n})
}

// ---- helpers ----

// account is the caller's account as the webhooks service knows it.
func account(req *restful.Request) endpoints.Account {
	return endpoints.AccountOf(principal(req).Account)
}

// webhookError answers a refusal of the webhooks service with the spec's status.
func (r webhooksResource) webhookError(req *restful.Request, resp *restful.Response, err error) {
	var conflict *endpoints.ConflictError
	var invalid *endpoints.InvalidError
	var addon *endpoints.AddonRefusedError
	var limited *endpoints.RateLimitedError
	switch {
	case errors.As(err, &addon):
		writeAddonRefusal(resp, addon.Reason)
	case errors.As(err, &limited):
		metrics.APIRateLimited(webhookLimitNames[limited.Operation])
		tooManyRequests(resp, wholeSeconds(limited.RetryAfter))
	case errors.Is(err, endpoints.ErrEndpointNotFound):
		notFound(resp, "endpoint")
	case errors.Is(err, endpoints.ErrDeliveryNotFound):
		notFound(resp, "delivery")
	case errors.As(err, &conflict):
		writeError(resp, http.StatusConflict, conflict.Message)
	case errors.As(err, &invalid):
		writeValidation(resp, fieldErrors(invalid.Fields))
	default:
		r.internalError(req, resp, err)
	}
}

func webhookView(ep *switchboardv1alpha1.WebhookEndpoint) Webhook {
	v := endpoints.ViewOf(ep)
	return Webhook{PublicID: v.PublicID, Name: v.Name, URL: v.URL, Events: v.Events, Status: v.Status, FailingSince: v.FailingSince,
		RateLimit: v.RateLimit}
}
