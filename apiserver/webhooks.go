package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/events"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhooks"
)

// Rate limits of the webhook operations, per account per minute (spec Limits).
const (
	webhookAddPerMinute    = 20
	webhookTestPerMinute   = 10
	webhookResendPerMinute = 30
	// webhookDeliveriesListed and webhookDeliveriesDays bound GET .../deliveries.
	webhookDeliveriesListed = 100
	webhookDeliveriesDays   = 30
	webhookNameMaxLength    = 100
)

// WebhooksConfig configures the webhook operations. They read and write WebhookEndpoint and
// WebhookDelivery resources (Config.Kube) in the account's namespace; the API keeps no copy,
// so a change made with kubectl shows here and the other way round.
type WebhooksConfig struct {
	// Reader reads past the manager's cache (read-after-write for the caller); default Config.Kube.
	Reader client.Reader
	// URLPolicy checks endpoint addresses (https, public internet only).
	URLPolicy webhooks.URLPolicy
}

// Webhooks adds the /v1/webhooks operations to New's container: New(cfg, st, Webhooks(wc)).
// They need Config.Kube.
func Webhooks(wc WebhooksConfig) func(*Server) Resource {
	return func(s *Server) Resource {
		if wc.Reader == nil {
			wc.Reader = s.cfg.Kube
		}
		return webhooksResource{Server: s, wc: wc}
	}
}

// Webhook is a webhook endpoint. public_id is the WebhookEndpoint resource's name.
type Webhook struct {
	PublicID     string     `json:"public_id" required:"true"`
	Name         string     `json:"name" required:"true"`
	URL          string     `json:"url" required:"true"`
	Events       []string   `json:"events" required:"true"`
	Status       string     `json:"status" required:"true" enum:"active,paused"`
	FailingSince *time.Time `json:"failing_since" required:"true"`
}

// WebhookList is GET /webhooks.
type WebhookList struct {
	// CanAdd: under the endpoint limit and the account has Integrations (adding needs it).
	CanAdd    bool      `json:"can_add" required:"true"`
	Events    []string  `json:"events" required:"true"`
	Max       int       `json:"max" required:"true"`
	Endpoints []Webhook `json:"endpoints" required:"true"`
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
	name          string
}

// WebhookDeliveryList is GET /webhooks/{endpoint}/deliveries.
type WebhookDeliveryList struct {
	Deliveries []WebhookDeliveryRecord `json:"deliveries" required:"true"`
}

// WebhookQueued answers test and resend.
type WebhookQueued struct {
	Queued bool `json:"queued" required:"true"`
}

// WebhookCreate is the body of POST /webhooks.
type WebhookCreate struct {
	Name   *string   `json:"name" required:"true" nullable:"false" minLength:"1" maxLength:"100"`
	URL    *string   `json:"url" required:"true" nullable:"false" format:"uri" description:"An https:// address on the public internet."`
	Events *[]string `json:"events" required:"true" nullable:"false" minItems:"1"`
}

// WebhookChange is the body of PATCH /webhooks/{endpoint}; every field is optional.
type WebhookChange struct {
	Name   *string   `json:"name,omitempty" nullable:"false" minLength:"1" maxLength:"100"`
	URL    *string   `json:"url,omitempty" nullable:"false" format:"uri" description:"An https:// address on the public internet."`
	Events *[]string `json:"events,omitempty" nullable:"false" minItems:"1"`
	Status *string   `json:"status,omitempty" nullable:"false" enum:"active,paused"`
}

type webhooksResource struct {
	*Server
	wc WebhooksConfig
}

func (r webhooksResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/webhooks").Produces(restful.MIME_JSON)
	endpointParam := idParam(ws, "endpoint", "The endpoint's public_id.", kubeNamePattern, kubeNameMaxLength)
	eventParam := idParam(ws, "eventId", "The delivery's event_id (a UUID).", uuidPattern, uuidMaxLength).DataFormat("uuid")
	manage := Access{Permission: auth.WebhooksManage, OwnerOnly: true}
	gated := Access{Permission: auth.WebhooksManage, OwnerOnly: true, NeedsIntegrations: true}
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
		Returns(http.StatusOK, "OK", WebhookList{}), manage))
	ws.Route(protect(withBody(r.idempotent(ws.POST("")).To(r.create).Operation("createWebhook").
		Doc("Adds an endpoint (at most 5). The signing secret is returned only here.").
		Reads(WebhookCreate{}).
		Returns(http.StatusCreated, "The endpoint and its signing secret.", WebhookWithSecret{}).
		Returns(http.StatusConflict, "The account already has the most endpoints allowed.", ErrorBody{})), gated))
	ws.Route(protect(withBody(ws.PATCH("/{endpoint}").To(r.update).Operation("updateWebhook").Param(endpointParam).
		Doc("Changes name, url, events or status (active or paused). Setting active also switches on an endpoint switched off for failing.").
		Reads(WebhookChange{}).
		Returns(http.StatusOK, "The endpoint as saved.", WebhookUpdated{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{})), manage))
	ws.Route(protect(ws.DELETE("/{endpoint}").To(r.delete).Operation("deleteWebhook").Param(endpointParam).
		Doc("Removes the endpoint; its deliveries stop at once, including an attempt in flight.").
		Returns(http.StatusNoContent, "Removed.", nil).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manage))
	ws.Route(protect(r.idempotent(ws.POST("/{endpoint}/rotate")).To(r.rotate).Operation("rotateWebhookSecret").Param(endpointParam).
		Doc("Issues a new signing secret, returned only here; later attempts are signed with it.").
		Returns(http.StatusOK, "The endpoint and its new signing secret.", WebhookWithSecret{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manage))
	ws.Route(protect(r.idempotent(ws.POST("/{endpoint}/test")).To(r.test).Operation("testWebhook").Param(endpointParam).
		Doc("Queues a signed test event to an active endpoint.").
		Returns(http.StatusAccepted, "Queued.", WebhookQueued{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}).
		Returns(http.StatusConflict, "The endpoint is paused or switched off.", ErrorBody{}), gated))
	ws.Route(protect(ws.GET("/{endpoint}/deliveries").To(r.deliveries).Operation("listWebhookDeliveries").Param(endpointParam).
		Doc("The latest 100 deliveries of the last 30 days, newest first.").
		Returns(http.StatusOK, "OK", WebhookDeliveryList{}).
		Returns(http.StatusNotFound, noEndpoint, ErrorBody{}), manage))
	ws.Route(protect(r.idempotent(ws.POST("/{endpoint}/deliveries/{eventId}/resend")).To(r.resend).Operation("resendWebhookDelivery").
		Param(endpointParam).Param(eventParam).
		Doc("Sends a failed or cancelled delivery again as a fresh delivery with the same event id.").
		Returns(http.StatusAccepted, "Queued.", WebhookQueued{}).
		Returns(http.StatusNotFound, "No such endpoint, or no delivery of that event to it.", ErrorBody{}).
		Returns(http.StatusConflict, "The delivery is neither failed nor cancelled, or the endpoint is not active.", ErrorBody{}), gated))
	c.Add(ws)
}

// ---- operations ----

func (r webhooksResource) list(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	eps, err := r.endpoints(req.Request.Context(), p.Account.PublicID)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	// Adding needs Integrations too, so can_add is false while POST /webhooks would be refused.
	canAdd := len(eps) < switchboardv1alpha1.MaxWebhookEndpointsPerAccount && integrationsRefusal(p) == ""
	out := WebhookList{CanAdd: canAdd, Events: subscribable(),
		Max: switchboardv1alpha1.MaxWebhookEndpointsPerAccount, Endpoints: make([]Webhook, 0, len(eps))}
	for i := range eps {
		out.Endpoints = append(out.Endpoints, webhookView(&eps[i]))
	}
	writeJSON(resp, http.StatusOK, out)
}

func (r webhooksResource) create(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	p := principal(req)
	if !r.limit(req, resp, "webhooks-add", webhookAddPerMinute) {
		return
	}
	var in WebhookCreate
	if !readJSON(req, resp, &in) {
		return
	}
	fe := fieldErrors{}
	name := r.checkName(fe, in.Name, true)
	url := r.checkURL(ctx, fe, in.URL, true)
	evts := checkEvents(fe, in.Events, true)
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	acct := p.Account.PublicID
	ns := tenancy.Namespace(acct)
	if err := r.ensureNamespace(ctx, acct); err != nil {
		r.internalError(req, resp, err)
		return
	}
	// One creation at a time per account, so the limit holds between replicas.
	release, err := r.store.WebhookAccountLock(ctx, p.Account.ID)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	defer release()
	eps, err := r.endpoints(ctx, acct)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if len(eps) >= switchboardv1alpha1.MaxWebhookEndpointsPerAccount {
		writeError(resp, http.StatusConflict, fmt.Sprintf("This account already has %d webhook endpoints, the most allowed. Remove one first.", switchboardv1alpha1.MaxWebhookEndpointsPerAccount))
		return
	}
	id := newEndpointName()
	ep := &switchboardv1alpha1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns, Labels: map[string]string{switchboardv1alpha1.AccountLabel: acct}},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: acct, DisplayName: name, URL: url, Events: evts,
			SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: webhooks.SecretName(id)}},
	}
	if err := r.cfg.Kube.Create(ctx, ep); err != nil {
		r.kubeError(req, resp, err)
		return
	}
	secret := webhooks.NewSecret()
	if err := r.cfg.Kube.Create(ctx, webhooks.NewSigningSecret(ep, webhooks.SecretName(id), secret)); err != nil {
		_ = r.cfg.Kube.Delete(context.WithoutCancel(ctx), ep)
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusCreated, WebhookWithSecret{Endpoint: webhookView(ep), Secret: secret})
}

func (r webhooksResource) update(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	var in WebhookChange
	if !readJSON(req, resp, &in) {
		return
	}
	fe := fieldErrors{}
	name := r.checkName(fe, in.Name, false)
	url := r.checkURL(ctx, fe, in.URL, false)
	evts := checkEvents(fe, in.Events, false)
	if in.Status != nil && *in.Status != "active" && *in.Status != "paused" {
		fe.add("status", "The status must be active or paused.")
	}
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	base := ep.DeepCopy()
	if in.Name != nil {
		ep.Spec.DisplayName = name
	}
	if in.URL != nil {
		ep.Spec.URL = url
	}
	if in.Events != nil {
		ep.Spec.Events = evts
	}
	switchedOn := false
	if in.Status != nil {
		paused := *in.Status == "paused"
		switchedOn = !paused && webhooks.SwitchedOff(ep)
		ep.Spec.Paused = paused
	}
	if err := r.cfg.Kube.Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		r.kubeError(req, resp, err)
		return
	}
	view := webhookView(ep)
	if switchedOn {
		view.FailingSince = nil // the controller clears it as it switches the endpoint on
	}
	writeJSON(resp, http.StatusOK, WebhookUpdated{Endpoint: view})
}

func (r webhooksResource) delete(req *restful.Request, resp *restful.Response) {
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	// Background propagation: the Secret and the deliveries it owns are garbage collected;
	// the delivery controller cancels an attempt in flight as soon as it sees the deletion.
	err := r.cfg.Kube.Delete(req.Request.Context(), ep, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		r.internalError(req, resp, err)
		return
	}
	resp.WriteHeader(http.StatusNoContent)
}

func (r webhooksResource) rotate(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	secret := webhooks.NewSecret()
	if ep.Spec.SigningSecretRef == nil {
		base := ep.DeepCopy()
		ep.Spec.SigningSecretRef = &switchboardv1alpha1.LocalSecretReference{Name: webhooks.SecretName(ep.Name)}
		if err := r.cfg.Kube.Patch(ctx, ep, client.MergeFrom(base)); err != nil {
			r.kubeError(req, resp, err)
			return
		}
	}
	key := types.NamespacedName{Namespace: ep.Namespace, Name: ep.Spec.SigningSecretRef.Name}
	sec := &corev1.Secret{}
	err := r.wc.Reader.Get(ctx, key, sec)
	switch {
	case apierrors.IsNotFound(err):
		err = r.cfg.Kube.Create(ctx, webhooks.NewSigningSecret(ep, key.Name, secret))
	case err == nil:
		base := sec.DeepCopy()
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[switchboardv1alpha1.SigningSecretKey] = []byte(secret)
		err = r.cfg.Kube.Patch(ctx, sec, client.MergeFrom(base))
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, WebhookWithSecret{Endpoint: webhookView(ep), Secret: secret})
}

func (r webhooksResource) test(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	p := principal(req)
	if !r.limit(req, resp, "webhooks-test", webhookTestPerMinute) {
		return
	}
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	if !webhooks.Deliverable(ep) {
		writeError(resp, http.StatusConflict, "This endpoint is "+notActiveWord(ep)+"; set it active to send a test event.")
		return
	}
	now := r.cfg.Clock.Now()
	ev, err := events.ForTest(p.Account.ID, p.Account.Name, now)
	if err == nil {
		err = r.store.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := store.EnqueueEvent(ctx, tx, ev); err != nil {
				return err
			}
			return store.MarkEventDispatchedTx(ctx, tx, ev.ID, now)
		})
	}
	if err == nil {
		err = r.cfg.Kube.Create(ctx, webhooks.NewDelivery(ep, ev.ID.String(), events.Test, "", ""))
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, WebhookQueued{Queued: true})
}

func (r webhooksResource) deliveries(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	since := r.cfg.Clock.Now().Add(-webhookDeliveriesDays * 24 * time.Hour)
	out, err := r.deliveryRecords(ctx, principal(req).Account.ID, ep, since, "")
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if len(out) > webhookDeliveriesListed {
		out = out[:webhookDeliveriesListed]
	}
	writeJSON(resp, http.StatusOK, WebhookDeliveryList{Deliveries: out})
}

func (r webhooksResource) resend(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	if !r.limit(req, resp, "webhooks-resend", webhookResendPerMinute) {
		return
	}
	ep, ok := r.endpoint(req, resp)
	if !ok {
		return
	}
	eventID, err := uuid.Parse(req.PathParameter("eventId"))
	if err != nil || eventID.String() != strings.ToLower(req.PathParameter("eventId")) {
		notFound(resp, "delivery")
		return
	}
	recs, err := r.deliveryRecords(ctx, principal(req).Account.ID, ep, time.Time{}, eventID.String())
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if len(recs) == 0 {
		notFound(resp, "delivery")
		return
	}
	for _, d := range recs {
		if d.Status == "pending" || d.Status == "retrying" {
			writeError(resp, http.StatusConflict, "This event is still being delivered to the endpoint; it can be resent once it has failed or been cancelled.")
			return
		}
	}
	latest := recs[0]
	if latest.Status != "failed" && latest.Status != "cancelled" {
		writeError(resp, http.StatusConflict, "Only a failed or cancelled delivery can be resent; this one "+latest.Status+".")
		return
	}
	if !webhooks.Deliverable(ep) {
		writeError(resp, http.StatusConflict, "This endpoint is "+notActiveWord(ep)+"; set it active to resend deliveries.")
		return
	}
	d := webhooks.NewDelivery(ep, eventID.String(), latest.Event, latest.name, "resend-"+newEndpointName())
	if err := r.cfg.Kube.Create(ctx, d); err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusAccepted, WebhookQueued{Queued: true})
}

// ---- helpers ----

// limit counts a hit on the account's limit for op; false when over it (429 written).
func (r webhooksResource) limit(req *restful.Request, resp *restful.Response, op string, perMinute int) bool {
	ok, retryAfter, err := r.allow(req.Request.Context(), fmt.Sprintf("%s:account:%d", op, principal(req).Account.ID), perMinute)
	if err != nil {
		r.internalError(req, resp, err)
		return false
	}
	if !ok {
		metrics.APIRateLimited(webhookLimitNames[op])
		tooManyRequests(resp, retryAfter)
	}
	return ok
}

// endpoints lists the account's endpoints (not being removed), oldest first.
func (r webhooksResource) endpoints(ctx context.Context, account string) ([]switchboardv1alpha1.WebhookEndpoint, error) {
	list := &switchboardv1alpha1.WebhookEndpointList{}
	if err := r.wc.Reader.List(ctx, list, client.InNamespace(tenancy.Namespace(account))); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, ep := range list.Items {
		if ep.DeletionTimestamp == nil && ep.Spec.AccountID == account {
			out = append(out, ep)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i].CreationTimestamp.Time, out[j].CreationTimestamp.Time
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// endpoint reads the path's endpoint of the caller's account, or writes the 404.
func (r webhooksResource) endpoint(req *restful.Request, resp *restful.Response) (*switchboardv1alpha1.WebhookEndpoint, bool) {
	acct := principal(req).Account.PublicID
	name := req.PathParameter("endpoint")
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	err := r.wc.Reader.Get(req.Request.Context(), types.NamespacedName{Namespace: tenancy.Namespace(acct), Name: name}, ep)
	if apierrors.IsNotFound(err) || (err == nil && (ep.Spec.AccountID != acct || ep.DeletionTimestamp != nil)) ||
		(err != nil && len(name) > 253) {
		notFound(resp, "endpoint")
		return nil, false
	}
	if err != nil {
		// Backstop for ids storableIDs let through: the client refuses a name that cannot
		// be a Kubernetes name before sending anything (a plain error, not a Status).
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || !kubeName(name) {
			notFound(resp, "endpoint")
			return nil, false
		}
		r.internalError(req, resp, err)
		return nil, false
	}
	return ep, true
}

// kubeName reports whether name can name a namespaced object.
func kubeName(name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0 && len(content.IsPathSegmentName(name)) == 0
}

// deliveryRecords merges the endpoint's live deliveries and its history (newest first),
// optionally of one event only.
func (r webhooksResource) deliveryRecords(ctx context.Context, accountID int64, ep *switchboardv1alpha1.WebhookEndpoint, since time.Time, eventID string) ([]WebhookDeliveryRecord, error) {
	sel := client.MatchingLabels{webhooks.LabelEndpoint: ep.Name}
	if eventID != "" {
		sel[webhooks.LabelEventID] = eventID
	}
	live := &switchboardv1alpha1.WebhookDeliveryList{}
	if err := r.wc.Reader.List(ctx, live, client.InNamespace(ep.Namespace), sel); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []WebhookDeliveryRecord{}
	for _, d := range live.Items {
		if d.Spec.EndpointName != ep.Name || d.CreationTimestamp.Time.Before(since) {
			continue
		}
		seen[d.Name] = true
		rec := WebhookDeliveryRecord{Event: string(d.Spec.EventType), EventID: d.Spec.EventID, Status: webhooks.APIStatus(d.Status.Phase),
			Attempts: int(d.Status.Attempts), ResponseCode: int(d.Status.LastResponseCode), LastError: d.Status.LastError,
			CreatedAt: d.CreationTimestamp.UTC(), name: d.Name}
		if d.Status.NextAttemptAt != nil {
			t := d.Status.NextAttemptAt.UTC()
			rec.NextAttemptAt = &t
		}
		out = append(out, rec)
	}
	var hist []store.FinishedDelivery
	var err error
	if eventID != "" {
		var h store.FinishedDelivery
		h, err = r.store.LatestFinishedDelivery(ctx, accountID, ep.Name, uuid.MustParse(eventID))
		if err == nil {
			hist = []store.FinishedDelivery{h}
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	} else {
		hist, err = r.store.DeliveryHistory(ctx, accountID, ep.Name, since, webhookDeliveriesListed)
	}
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		if seen[h.DeliveryName] {
			continue
		}
		out = append(out, WebhookDeliveryRecord{Event: h.EventType, EventID: h.EventID.String(), Status: h.Status, Attempts: h.Attempts,
			ResponseCode: h.ResponseCode, LastError: h.LastError, CreatedAt: h.CreatedAt.UTC(), name: h.DeliveryName})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

func (r webhooksResource) ensureNamespace(ctx context.Context, account string) error {
	ns := &corev1.Namespace{}
	err := r.wc.Reader.Get(ctx, types.NamespacedName{Name: tenancy.Namespace(account)}, ns)
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenancy.Namespace(account),
		Labels: map[string]string{tenancy.LabelAccount: account}}}
	if err := r.cfg.Kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// kubeError maps a refusal of the API server's own validation to 422, anything else to 500.
func (r webhooksResource) kubeError(req *restful.Request, resp *restful.Response, err error) {
	if apierrors.IsNotFound(err) {
		notFound(resp, "endpoint")
		return
	}
	if apierrors.IsInvalid(err) {
		writeValidation(resp, fieldErrors{"endpoint": {"The endpoint was refused: " + err.Error()}})
		return
	}
	r.internalError(req, resp, err)
}

func (r webhooksResource) checkName(fe fieldErrors, name *string, required bool) string {
	if name == nil {
		if required {
			fe.add("name", "The name is required.")
		}
		return ""
	}
	n := strings.TrimSpace(*name)
	switch {
	case n == "":
		fe.add("name", "The name must not be empty.")
	case utf8.RuneCountInString(n) > webhookNameMaxLength:
		fe.add("name", fmt.Sprintf("The name must be at most %d characters.", webhookNameMaxLength))
	}
	return n
}

func (r webhooksResource) checkURL(ctx context.Context, fe fieldErrors, url *string, required bool) string {
	if url == nil {
		if required {
			fe.add("url", "The url is required.")
		}
		return ""
	}
	u := strings.TrimSpace(*url)
	if err := webhooks.ValidateURL(ctx, u, r.wc.URLPolicy); err != nil {
		fe.add("url", "The url "+err.Error()+".")
		return u
	}
	return lowerCaseScheme(u)
}

// lowerCaseScheme writes a valid address's scheme as https: schemes are case-insensitive,
// but the resource (and so every delivery) expects the usual form.
func lowerCaseScheme(validURL string) string {
	scheme, rest, _ := strings.Cut(validURL, ":")
	return strings.ToLower(scheme) + ":" + rest
}

func checkEvents(fe fieldErrors, evts *[]string, required bool) []switchboardv1alpha1.WebhookEventType {
	if evts == nil {
		if required {
			fe.add("events", "The events are required: one or more of "+strings.Join(subscribable(), ", ")+".")
		}
		return nil
	}
	if len(*evts) == 0 {
		fe.add("events", "Choose one or more of "+strings.Join(subscribable(), ", ")+".")
		return nil
	}
	var out []switchboardv1alpha1.WebhookEventType
	for _, e := range *evts {
		if !slices.Contains(subscribable(), e) {
			fe.add("events", fmt.Sprintf("%q is not an event an endpoint can receive; use %s.", e, strings.Join(subscribable(), ", ")))
			continue
		}
		if !slices.Contains(out, switchboardv1alpha1.WebhookEventType(e)) {
			out = append(out, switchboardv1alpha1.WebhookEventType(e))
		}
	}
	return out
}

func subscribable() []string {
	out := make([]string, len(switchboardv1alpha1.SubscribableEvents))
	for i, e := range switchboardv1alpha1.SubscribableEvents {
		out[i] = string(e)
	}
	return out
}

func webhookView(ep *switchboardv1alpha1.WebhookEndpoint) Webhook {
	w := Webhook{PublicID: ep.Name, Name: ep.Spec.DisplayName, URL: ep.Spec.URL, Events: make([]string, 0, len(ep.Spec.Events)), Status: "active"}
	for _, e := range ep.Spec.Events {
		w.Events = append(w.Events, string(e))
	}
	// Switching off also sets spec.paused, so a switched-off endpoint shows as paused.
	if ep.Spec.Paused {
		w.Status = "paused"
	}
	if ep.Status.FailingSince != nil {
		t := ep.Status.FailingSince.UTC()
		w.FailingSince = &t
	}
	return w
}

func notActiveWord(ep *switchboardv1alpha1.WebhookEndpoint) string {
	if webhooks.SwitchedOff(ep) {
		return "switched off after failing for 24 hours"
	}
	return "paused"
}

var endpointIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newEndpointName is a fresh endpoint public_id (and resource name): whep- and 16 random
// lower-case base32 characters.
func newEndpointName() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "whep-" + endpointIDEncoding.EncodeToString(b)
}
