// Package manage is the webhooks service behind the /v1/webhooks API and the portal's
// webhooks page: it owns the Integrations gate of adding, testing, resending and recovering,
// the per-account rate limits of those operations, the five-endpoint limit and its lock, the
// resend rule, how an endpoint is presented (View) and the merge of live deliveries with the
// history. The HTTP handlers only translate requests and answers. It is a package of
// its own because it reads the store, which imports internal/webhook/send for DeliveryStatus.
package endpoints

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// Bounds of the webhook operations (spec: Webhooks, Limits).
const (
	// DeliveriesListed and DeliveriesDays bound Deliveries.
	DeliveriesListed = 100
	DeliveriesDays   = 30
	NameMaxLength    = 100
)

// Errors the handlers translate: ErrEndpointNotFound and ErrDeliveryNotFound are 404s.
var (
	ErrEndpointNotFound = errors.New("no such endpoint on this account")
	ErrDeliveryNotFound = errors.New("no such delivery on this account")
)

// ConflictError is a request the endpoint's state refuses (the spec's 409s).
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// InvalidError is input the service refuses, by field (the spec's 422).
type InvalidError struct{ Fields map[string][]string }

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid webhook input: %v", e.Fields) }

func (e *InvalidError) add(field, message string) {
	if e.Fields == nil {
		e.Fields = map[string][]string{}
	}
	e.Fields[field] = append(e.Fields[field], message)
}

func (e *InvalidError) orNil() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
}

// AddonRefusedError is an operation the Integrations gate refuses (the spec's 403 add-on
// refusal); Reason is one of the plans.Reason* values.
type AddonRefusedError struct{ Reason string }

func (e *AddonRefusedError) Error() string { return "the account lacks Integrations: " + e.Reason }

// RateLimitedError is an operation past its per-account limit (the spec's 429).
type RateLimitedError struct {
	// Operation is one of the Op* names.
	Operation  string
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many %s requests for this account; try again in %s", e.Operation, e.RetryAfter)
}

// The operations with a per-account rate limit, and their limits per minute (spec Limits).
const (
	OpAdd     = "webhooks-add"
	OpTest    = "webhooks-test"
	OpResend  = "webhooks-resend"
	OpRecover = "webhooks-recover"
)

// PerMinute is each limited operation's requests per account per minute. A recovery queues
// many deliveries at once; repeating it soon adds nothing.
var PerMinute = map[string]int{OpAdd: 20, OpTest: 10, OpResend: 30, OpRecover: 5}

// Account is the caller's account: who it is, and what its Integrations gate needs.
type Account struct {
	ID       int64
	PublicID string
	Name     string
	// Status, Plan, Addons and IntegrationsDisabled decide the Integrations gate.
	Status               string
	Plan                 string
	Addons               []string
	IntegrationsDisabled bool
}

// AccountOf is the service's view of a stored account.
func AccountOf(a store.Account) Account {
	return Account{ID: a.ID, PublicID: a.PublicID, Name: a.Name, Status: a.Status, Plan: a.Plan, Addons: a.Addons,
		IntegrationsDisabled: a.IntegrationsDisabled}
}

// IntegrationsRefusal is why the Integrations gate refuses the account ("" when it passes).
func (a Account) IntegrationsRefusal() string {
	return plans.IntegrationsGate(a.Plan, a.Addons, a.Status, a.IntegrationsDisabled)
}

// admit is the Integrations gate and then the account's rate limit of op, in that order.
func (s *Endpoints) admit(ctx context.Context, acct Account, op string) error {
	if reason := acct.IntegrationsRefusal(); reason != "" {
		return &AddonRefusedError{Reason: reason}
	}
	now := s.Clock.Now()
	window := now.Truncate(time.Minute)
	n, err := s.Store.HitRateLimit(ctx, fmt.Sprintf("%s:account:%d", op, acct.ID), window)
	if err != nil {
		return err
	}
	if n > PerMinute[op] {
		return &RateLimitedError{Operation: op, RetryAfter: window.Add(time.Minute).Sub(now)}
	}
	return nil
}

// View is an endpoint as the API and the portal present it.
type View struct {
	PublicID string
	Name     string
	URL      string
	Events   []string
	// Status is active or paused.
	Status       string
	FailingSince *time.Time
	// RateLimit is the most deliveries per second; nil: no cap.
	RateLimit *int
}

// ViewOf presents ep.
func ViewOf(ep *switchboardv1alpha1.WebhookEndpoint) View {
	v := View{PublicID: ep.Name, Name: ep.Spec.DisplayName, URL: ep.Spec.URL, Events: make([]string, 0, len(ep.Spec.Events)), Status: "active"}
	for _, e := range ep.Spec.Events {
		v.Events = append(v.Events, string(e))
	}
	// The spec has no name for the state a switch-off leaves: it shows as paused, and
	// setting it active switches it on.
	if ep.Spec.Paused || send.SwitchedOff(ep) {
		v.Status = "paused"
	}
	if ep.Status.FailingSince != nil {
		t := ep.Status.FailingSince.UTC()
		v.FailingSince = &t
	}
	if ep.Spec.RateLimit != nil {
		r := int(*ep.Spec.RateLimit)
		v.RateLimit = &r
	}
	return v
}

// Input is a new endpoint (Create: all required) or a change to one (Update: nil keeps).
type Input struct {
	Name   *string
	URL    *string
	Events *[]string
	// Status is active or paused (Update only).
	Status *string
	// RateLimit caps deliveries per second (MinRateLimit to MaxRateLimit); SetRateLimit says
	// whether the input gives it at all (false leaves it as it is; true with RateLimit nil
	// removes the cap).
	RateLimit    *int
	SetRateLimit bool
}

// The range of an endpoint's rate_limit, deliveries per second.
const (
	MinRateLimit = 1
	MaxRateLimit = 1000
)

// RateLimitInvalid is the refusal of a rate limit out of range or not a whole number.
var RateLimitInvalid = fmt.Sprintf("The rate limit must be a whole number of deliveries per second from %d to %d, or null for none.", MinRateLimit, MaxRateLimit)

// checkRateLimit validates in's rate limit; the result is the spec value.
func checkRateLimit(bad *InvalidError, in Input) *int32 {
	if !in.SetRateLimit || in.RateLimit == nil {
		return nil
	}
	if v := *in.RateLimit; v < MinRateLimit || v > MaxRateLimit {
		bad.add("rate_limit", RateLimitInvalid)
		return nil
	}
	v := int32(*in.RateLimit)
	return &v
}

// Delivery is one delivery of an event to an endpoint, live or finished.
type Delivery struct {
	Name          string
	Event         string
	EventID       string
	Status        send.DeliveryStatus
	Attempts      int
	ResponseCode  int
	LastError     string
	CreatedAt     time.Time
	NextAttemptAt *time.Time
}

// Store is what Endpoints needs of the database: the per-account limits and lock, the
// outbox for tests, resends and recovery, and the delivery history.
type Store interface {
	store.RateLimits
	store.WebhookEndpoints
	store.Outbox
	store.DeliveryHistory
	store.Transactions
}

// Endpoints manages an account's WebhookEndpoints (in its namespace; the API keeps no copy,
// so kubectl and the API see the same) and their deliveries.
type Endpoints struct {
	// Kube writes; Reader reads past the manager's cache (read-after-write for the caller).
	Kube   client.Client
	Reader client.Reader
	Store  Store
	Clock  clock.PassiveClock
	// URLPolicy checks endpoint addresses (https, public internet only).
	URLPolicy send.URLPolicy
}

// Subscribable lists the events an endpoint can receive.
func Subscribable() []string {
	out := make([]string, len(switchboardv1alpha1.SubscribableEvents))
	for i, e := range switchboardv1alpha1.SubscribableEvents {
		out[i] = string(e)
	}
	return out
}

// DeliveryEvents are the event types a delivery can have: the subscribable ones and test.
func DeliveryEvents() []string {
	return append(Subscribable(), string(switchboardv1alpha1.EventTest))
}

// DeliveryStatuses are the statuses a delivery can have, in the order a delivery goes through them.
var DeliveryStatuses = []string{string(send.DeliveryPending), string(send.DeliveryRetrying),
	string(send.DeliverySucceeded), string(send.DeliveryFailed), string(send.DeliveryCancelled)}

// DeliveryFilter narrows a delivery log; an empty field matches every delivery.
type DeliveryFilter struct {
	Event  string
	Status string
}

// Apply keeps the deliveries f matches, in their order.
func (f DeliveryFilter) Apply(ds []Delivery) []Delivery {
	out := []Delivery{}
	for _, d := range ds {
		if (f.Event == "" || d.Event == f.Event) && (f.Status == "" || string(d.Status) == f.Status) {
			out = append(out, d)
		}
	}
	return out
}

// List is the account's endpoints (not being removed), oldest first.
func (s *Endpoints) List(ctx context.Context, account string) ([]switchboardv1alpha1.WebhookEndpoint, error) {
	list := &switchboardv1alpha1.WebhookEndpointList{}
	if err := s.Reader.List(ctx, list, client.InNamespace(tenancy.Namespace(account))); err != nil {
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

// Get is the account's endpoint named id; ErrEndpointNotFound when there is none (also for
// an id that cannot name one).
func (s *Endpoints) Get(ctx context.Context, account, id string) (*switchboardv1alpha1.WebhookEndpoint, error) {
	ep := &switchboardv1alpha1.WebhookEndpoint{}
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: tenancy.Namespace(account), Name: id}, ep)
	if apierrors.IsNotFound(err) || (err == nil && (ep.Spec.AccountID != account || ep.DeletionTimestamp != nil)) {
		return nil, ErrEndpointNotFound
	}
	if err != nil {
		// The client refuses a name that cannot be a Kubernetes name before sending anything
		// (a plain error, not a Status).
		if len(id) > 253 || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || !kubeName(id) {
			return nil, ErrEndpointNotFound
		}
		return nil, err
	}
	return ep, nil
}

// kubeName reports whether name can name a namespaced object.
func kubeName(name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0 && len(content.IsPathSegmentName(name)) == 0
}

// Create adds an endpoint and its signing secret, unless the account has
// MaxWebhookEndpointsPerAccount already (ConflictError). It returns the secret: the only time
// it is shown. Like Test, Resend and Recover it needs Integrations (AddonRefusedError) and
// counts against its per-account limit (RateLimitedError).
func (s *Endpoints) Create(ctx context.Context, acct Account, in Input) (*switchboardv1alpha1.WebhookEndpoint, string, error) {
	if err := s.admit(ctx, acct, OpAdd); err != nil {
		return nil, "", err
	}
	bad := &InvalidError{}
	name := checkName(bad, in.Name, true)
	url := s.checkURL(ctx, bad, in.URL, true)
	evts := checkEvents(bad, in.Events, true)
	rateLimit := checkRateLimit(bad, in)
	if err := bad.orNil(); err != nil {
		return nil, "", err
	}
	if err := s.ensureNamespace(ctx, acct.PublicID); err != nil {
		return nil, "", err
	}
	// Marked before the lock is taken: the lock holds a connection of the pool until release.
	if err := s.Store.BeginEndpointWrite(ctx, acct.PublicID); err != nil {
		return nil, "", err
	}
	written := "" // the creation's version, once made
	defer func() { s.settleWrite(ctx, acct.PublicID, written) }()
	// One creation at a time per account, so the limit holds between replicas.
	release, err := s.Store.WebhookAccountLock(ctx, acct.ID)
	if err != nil {
		return nil, "", err
	}
	defer release()
	eps, err := s.List(ctx, acct.PublicID)
	if err != nil {
		return nil, "", err
	}
	if err := checkRoom(len(eps)); err != nil {
		return nil, "", err
	}
	id := newEndpointName()
	ep := &switchboardv1alpha1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: tenancy.Namespace(acct.PublicID),
			Labels: map[string]string{switchboardv1alpha1.AccountLabel: acct.PublicID}},
		Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: acct.PublicID, DisplayName: name, URL: url, Events: evts,
			RateLimit: rateLimit, SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: send.SecretName(id)}},
	}
	if err := s.Kube.Create(ctx, ep); err != nil {
		return nil, "", refused(err)
	}
	secret := send.NewSecret()
	if err := s.Kube.Create(ctx, send.NewSigningSecret(ep, send.SecretName(id), secret)); err != nil {
		_ = s.Kube.Delete(context.WithoutCancel(ctx), ep)
		return nil, "", err
	}
	written = ep.ResourceVersion
	return ep, secret, nil
}

// checkRoom is the endpoint limit: ConflictError when an account with existing endpoints
// may not add another.
func checkRoom(existing int) error {
	if existing >= switchboardv1alpha1.MaxWebhookEndpointsPerAccount {
		return &ConflictError{fmt.Sprintf("This account already has %d webhook endpoints, the most allowed. Remove one first.",
			switchboardv1alpha1.MaxWebhookEndpointsPerAccount)}
	}
	return nil
}

// CanAdd reports whether acct, with existing endpoints, may add one: under the endpoint limit
// and through the Integrations gate.
func CanAdd(acct Account, existing int) bool {
	return checkRoom(existing) == nil && acct.IntegrationsRefusal() == ""
}

// Update changes the endpoint's name, url, events or status. switchedOn is true when the
// change switches on an endpoint switched off for failing (the controller then clears its
// failure record).
func (s *Endpoints) Update(ctx context.Context, account, id string, in Input) (ep *switchboardv1alpha1.WebhookEndpoint, switchedOn bool, err error) {
	bad := &InvalidError{}
	name := checkName(bad, in.Name, false)
	url := s.checkURL(ctx, bad, in.URL, false)
	evts := checkEvents(bad, in.Events, false)
	rateLimit := checkRateLimit(bad, in)
	if in.Status != nil && *in.Status != "active" && *in.Status != "paused" {
		bad.add("status", "The status must be active or paused.")
	}
	if err := bad.orNil(); err != nil {
		return nil, false, err
	}
	ep, err = s.Get(ctx, account, id)
	if err != nil {
		return nil, false, err
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
	if in.SetRateLimit {
		ep.Spec.RateLimit = rateLimit
	}
	if in.Status != nil {
		paused := *in.Status == "paused"
		switchedOn = !paused && send.SwitchedOff(ep)
		if switchedOn {
			send.SwitchOn(ep, s.Clock.Now())
		}
		ep.Spec.Paused = paused
	}
	if err := s.Store.BeginEndpointWrite(ctx, account); err != nil {
		return nil, false, err
	}
	if err := s.Kube.Patch(ctx, ep, client.MergeFrom(base)); err != nil {
		s.settleWrite(ctx, account, "")
		return nil, false, refused(err)
	}
	s.settleWrite(ctx, account, ep.ResourceVersion)
	return ep, switchedOn, nil
}

// Delete removes the endpoint. Background propagation: the Secret and the deliveries it owns
// are garbage collected; the delivery controller cancels an attempt in flight as soon as it
// sees the deletion.
func (s *Endpoints) Delete(ctx context.Context, account, id string) error {
	ep, err := s.Get(ctx, account, id)
	if err != nil {
		return err
	}
	if err := s.Store.BeginEndpointWrite(ctx, account); err != nil {
		return err
	}
	err = s.Kube.Delete(ctx, ep, client.PropagationPolicy(metav1.DeletePropagationBackground))
	s.settleWrite(ctx, account, "") // the deletion's own version is not returned
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// settleWrite ends a write to the account's endpoints begun with Store.BeginEndpointWrite:
// it records version, the resourceVersion kube-apiserver gave the write, or when that is not
// known ("": the write failed, or was a deletion) the current version of the account's
// endpoints read live, which is past it. The dispatcher reads the account's endpoints from
// its watched cache once the cache has reached the recorded version (see
// engine.WatchedEndpoints). When nothing can be recorded the write stays marked as under
// way, and the account's endpoints are read live until a later write settles: slower, never
// stale, so the caller's answer does not depend on it.
func (s *Endpoints) settleWrite(ctx context.Context, account, version string) {
	ctx = context.WithoutCancel(ctx)
	var err error
	if version == "" {
		list := &switchboardv1alpha1.WebhookEndpointList{}
		if err = s.Reader.List(ctx, list, client.InNamespace(tenancy.Namespace(account)), client.Limit(1)); err == nil {
			version = list.ResourceVersion
		}
	}
	if err == nil {
		var v uint64
		if v, err = strconv.ParseUint(version, 10, 64); err == nil {
			err = s.Store.EndEndpointWrite(ctx, account, v)
		}
	}
	if err != nil {
		log.FromContext(ctx).Info("The account's webhook endpoints are read live until their next write: this one's version was not recorded",
			"account", account, "error", err.Error())
	}
}

// Rotate issues a new signing secret for the endpoint and returns it.
func (s *Endpoints) Rotate(ctx context.Context, account, id string) (*switchboardv1alpha1.WebhookEndpoint, string, error) {
	ep, err := s.Get(ctx, account, id)
	if err != nil {
		return nil, "", err
	}
	secret := send.NewSecret()
	key := types.NamespacedName{Namespace: ep.Namespace, Name: send.SigningSecretName(ep)}
	sec := &corev1.Secret{}
	err = s.Reader.Get(ctx, key, sec)
	switch {
	case apierrors.IsNotFound(err):
		err = s.Kube.Create(ctx, send.NewSigningSecret(ep, key.Name, secret))
	case err == nil:
		base := sec.DeepCopy()
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[switchboardv1alpha1.SigningSecretKey] = []byte(secret)
		err = s.Kube.Patch(ctx, sec, client.MergeFrom(base))
	}
	if err != nil {
		return nil, "", err
	}
	return ep, secret, nil
}

// Test queues a signed test event to an active endpoint (ConflictError otherwise). The queueing
// commits claim, the request's Idempotency-Key claim (nil without one).
func (s *Endpoints) Test(ctx context.Context, acct Account, id string, claim *store.IdempotencyClaim) error {
	if err := s.admit(ctx, acct, OpTest); err != nil {
		return err
	}
	ep, err := s.Get(ctx, acct.PublicID, id)
	if err != nil {
		return err
	}
	if !send.Deliverable(ep) {
		return &ConflictError{"This endpoint is " + notActiveWord(ep) + "; set it active to send a test event."}
	}
	ev, err := events.ForTest(acct.ID, acct.Name, s.Clock.Now())
	if err != nil {
		return err
	}
	// Queued like every other event, for this endpoint alone: the dispatcher makes the delivery.
	return s.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.CommitIdempotencyClaim(ctx, claim); err != nil {
			return err
		}
		return tx.EnqueueEventFor(ctx, ev, ep.Name)
	})
}

// Deliveries is the endpoint's latest DeliveriesListed deliveries of the last DeliveriesDays
// days, newest first.
func (s *Endpoints) Deliveries(ctx context.Context, acct Account, id string) ([]Delivery, error) {
	ep, err := s.Get(ctx, acct.PublicID, id)
	if err != nil {
		return nil, err
	}
	since := s.Clock.Now().Add(-DeliveriesDays * 24 * time.Hour)
	out, err := s.deliveries(ctx, acct.ID, ep, since, "")
	if err != nil {
		return nil, err
	}
	if len(out) > DeliveriesListed {
		out = out[:DeliveriesListed]
	}
	return out, nil
}

// EventDeliveries is one event's deliveries to an endpoint and the payload they post.
type EventDeliveries struct {
	EventID string
	Event   string
	// Payload is the JSON body every delivery of the event posts; nil once the outbox no
	// longer keeps the event.
	Payload []byte
	// Deliveries are the event's deliveries to the endpoint among those Deliveries lists,
	// newest first.
	Deliveries []Delivery
}

// Event is what the service keeps of the deliveries of eventID to the endpoint id:
// ErrDeliveryNotFound when Deliveries lists none.
func (s *Endpoints) Event(ctx context.Context, acct Account, id, eventID string) (EventDeliveries, error) {
	evID, err := uuid.Parse(eventID)
	if err != nil || evID.String() != strings.ToLower(eventID) {
		return EventDeliveries{}, ErrDeliveryNotFound
	}
	// The log's deliveries of the event, so this page and the log (and the API's) agree.
	all, err := s.Deliveries(ctx, acct, id)
	if err != nil {
		return EventDeliveries{}, err
	}
	var recs []Delivery
	for _, d := range all {
		if d.EventID == evID.String() {
			recs = append(recs, d)
		}
	}
	if len(recs) == 0 {
		return EventDeliveries{}, ErrDeliveryNotFound
	}
	out := EventDeliveries{EventID: evID.String(), Event: recs[0].Event, Deliveries: recs}
	out.Payload, err = s.Store.EventBody(ctx, acct.ID, evID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return EventDeliveries{}, err
	}
	return out, nil
}

// Resend sends the endpoint's delivery of eventID again, as a fresh delivery with the same
// event id (see ResendRule). The queueing commits claim, the request's Idempotency-Key claim
// (nil without one).
func (s *Endpoints) Resend(ctx context.Context, acct Account, id, eventID string, claim *store.IdempotencyClaim) error {
	if err := s.admit(ctx, acct, OpResend); err != nil {
		return err
	}
	ep, err := s.Get(ctx, acct.PublicID, id)
	if err != nil {
		return err
	}
	evID, err := uuid.Parse(eventID)
	if err != nil || evID.String() != strings.ToLower(eventID) {
		return ErrDeliveryNotFound
	}
	recs, err := s.deliveries(ctx, acct.ID, ep, time.Time{}, evID.String())
	if err != nil {
		return err
	}
	latest, err := ResendRule(recs, ep)
	if err != nil {
		return err
	}
	// Queued like every other event, for this endpoint alone: the dispatcher makes the
	// delivery, a new attempt series with a name of its own.
	err = s.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.CommitIdempotencyClaim(ctx, claim); err != nil {
			return err
		}
		return tx.EnqueueResend(ctx, acct.ID, evID, ep.Name, latest.Name, uuid.New(), s.Clock.Now())
	})
	if errors.Is(err, store.ErrNotFound) {
		return ErrDeliveryNotFound
	}
	return err
}

// RecoverWindowDays is how far back a recovery may reach: the history the service keeps of
// deliveries (the retention window).
const RecoverWindowDays = 30

// MaxRecoveredPerCall bounds what one recovery queues; a second call queues the rest, since
// what the first queued is left out while it waits.
const MaxRecoveredPerCall = 10000

// Recover queues a fresh delivery, same event id, of every event whose latest delivery to the
// endpoint since since ended failed or cancelled (each event once; see store.QueueRecovery),
// and returns how many it queued. since must be within RecoverWindowDays and not in the
// future (InvalidError); the endpoint must be active (ConflictError). The queueing commits
// claim, the request's Idempotency-Key claim (nil without one).
func (s *Endpoints) Recover(ctx context.Context, acct Account, id string, since *time.Time, claim *store.IdempotencyClaim) (int, error) {
	if err := s.admit(ctx, acct, OpRecover); err != nil {
		return 0, err
	}
	now := s.Clock.Now()
	bad := &InvalidError{}
	switch {
	case since == nil:
		bad.add("since", "is required: the oldest delivery to send again, as an RFC 3339 date-time.")
	case since.Before(now.Add(-RecoverWindowDays * 24 * time.Hour)):
		bad.add("since", fmt.Sprintf("must be within the last %d days, the deliveries the service keeps.", RecoverWindowDays))
	case since.After(now):
		bad.add("since", "must not be in the future.")
	}
	ep, err := s.Get(ctx, acct.PublicID, id)
	if err != nil {
		return 0, err
	}
	if err := bad.orNil(); err != nil {
		return 0, err
	}
	if !send.Deliverable(ep) {
		return 0, &ConflictError{"This endpoint is " + notActiveWord(ep) + "; set it active to recover its deliveries."}
	}
	// Deliveries the controller still holds are under way, not again; the store tells one
	// already finished (a cached copy whose removal is not seen yet) by its history row.
	live := &switchboardv1alpha1.WebhookDeliveryList{}
	if err := s.Reader.List(ctx, live, client.InNamespace(ep.Namespace), client.MatchingLabels{send.LabelEndpoint: ep.Name}); err != nil {
		return 0, err
	}
	var busy []store.LiveDelivery
	for _, d := range live.Items {
		if evID, err := uuid.Parse(d.Spec.EventID); err == nil && d.Spec.EndpointName == ep.Name {
			busy = append(busy, store.LiveDelivery{EventID: evID, Name: d.Name})
		}
	}
	return s.Store.QueueRecovery(ctx, store.Recovery{AccountID: acct.ID, EndpointPublicID: ep.Name, Since: *since, Now: now,
		Busy: busy, Limit: MaxRecoveredPerCall, Idempotency: claim})
}

// ResendRule decides a resend from the deliveries of one event to ep (newest first): the
// delivery to repeat, ErrDeliveryNotFound, or a ConflictError while the event is still being
// delivered, when the latest delivery is neither failed nor cancelled, or when ep is not
// active.
func ResendRule(recs []Delivery, ep *switchboardv1alpha1.WebhookEndpoint) (Delivery, error) {
	if len(recs) == 0 {
		return Delivery{}, ErrDeliveryNotFound
	}
	for _, d := range recs {
		if d.Status.InProgress() {
			return Delivery{}, &ConflictError{"This event is still being delivered to the endpoint; it can be resent once it has failed or been cancelled."}
		}
	}
	latest := recs[0]
	if !latest.Status.Resendable() {
		return Delivery{}, &ConflictError{"Only a failed or cancelled delivery can be resent; this one " + string(latest.Status) + "."}
	}
	if !send.Deliverable(ep) {
		return Delivery{}, &ConflictError{"This endpoint is " + notActiveWord(ep) + "; set it active to resend deliveries."}
	}
	return latest, nil
}

// deliveries merges the endpoint's live deliveries and its history (newest first),
// optionally of one event only.
func (s *Endpoints) deliveries(ctx context.Context, accountID int64, ep *switchboardv1alpha1.WebhookEndpoint, since time.Time, eventID string) ([]Delivery, error) {
	sel := client.MatchingLabels{send.LabelEndpoint: ep.Name}
	if eventID != "" {
		sel[send.LabelEventID] = eventID
	}
	live := &switchboardv1alpha1.WebhookDeliveryList{}
	if err := s.Reader.List(ctx, live, client.InNamespace(ep.Namespace), sel); err != nil {
		return nil, err
	}
	var hist []store.FinishedDelivery
	var err error
	if eventID != "" {
		var h store.FinishedDelivery
		h, err = s.Store.LatestFinishedDelivery(ctx, accountID, ep.Name, uuid.MustParse(eventID))
		if err == nil {
			hist = []store.FinishedDelivery{h}
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	} else {
		hist, err = s.Store.DeliveryHistory(ctx, accountID, ep.Name, since, DeliveriesListed)
	}
	if err != nil {
		return nil, err
	}
	// Still in the outbox: not delivered yet, or a first attempt under way. A paused
	// endpoint's share of its subscriptions is recorded cancelled when dispatched.
	filter := store.QueuedFilter{EndpointPublicID: ep.Name, Since: since, Limit: DeliveriesListed}
	if send.Deliverable(ep) {
		for _, t := range ep.Spec.Events {
			filter.Subscribed = append(filter.Subscribed, string(t))
		}
	}
	if eventID != "" {
		filter.EventID = uuid.MustParse(eventID)
	}
	queued, err := s.Store.QueuedDeliveriesFor(ctx, accountID, filter)
	if err != nil {
		return nil, err
	}
	return Merge(ep.Name, queued, live.Items, hist, since), nil
}

// Merge lists the deliveries to endpoint, newest first: the events in the outbox that go to
// it (pending: not dispatched yet, or a first attempt under way), the live resources created at or after since, and the
// history rows of deliveries that have no resource any more. Where two describe one
// delivery (the dispatcher or the controller is between steps) the later stage wins.
func Merge(endpoint string, queued []store.QueuedDelivery, live []switchboardv1alpha1.WebhookDelivery, hist []store.FinishedDelivery, since time.Time) []Delivery {
	seen := map[string]bool{}
	out := []Delivery{}
	for _, d := range live {
		if d.Spec.EndpointName != endpoint || d.CreationTimestamp.Time.Before(since) {
			continue
		}
		seen[d.Name] = true
		rec := Delivery{Name: d.Name, Event: string(d.Spec.EventType), EventID: d.Spec.EventID, Status: send.APIStatus(d.Status.Phase),
			Attempts: int(d.Status.Attempts), ResponseCode: int(d.Status.LastResponseCode), LastError: d.Status.LastError,
			CreatedAt: d.CreationTimestamp.UTC()}
		if d.Status.NextAttemptAt != nil {
			t := d.Status.NextAttemptAt.UTC()
			rec.NextAttemptAt = &t
		}
		out = append(out, rec)
	}
	for _, h := range hist {
		if seen[h.DeliveryName] {
			continue
		}
		seen[h.DeliveryName] = true
		out = append(out, Delivery{Name: h.DeliveryName, Event: h.EventType, EventID: h.EventID.String(), Status: h.Status,
			Attempts: h.Attempts, ResponseCode: h.ResponseCode, LastError: h.LastError, CreatedAt: h.CreatedAt.UTC()})
	}
	for _, q := range queued {
		salt := ""
		if q.Resend {
			salt = "resend-" + q.OutboxID.String() // as store.PendingEvent.DeliverySalt
		}
		name := send.DeliveryName(q.EventID.String(), endpoint, salt)
		if seen[name] || q.CreatedAt.Before(since) {
			continue
		}
		seen[name] = true // an event's outbox row and its deferred delivery, for a moment both
		out = append(out, Delivery{Name: name, Event: q.Type, EventID: q.EventID.String(), Status: send.DeliveryPending,
			CreatedAt: q.CreatedAt.UTC()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

func (s *Endpoints) ensureNamespace(ctx context.Context, account string) error {
	ns := &corev1.Namespace{}
	err := s.Reader.Get(ctx, types.NamespacedName{Name: tenancy.Namespace(account)}, ns)
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenancy.Namespace(account),
		Labels: map[string]string{tenancy.LabelAccount: account}}}
	if err := s.Kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// refused maps the API server's refusals of an endpoint write: NotFound (removed meanwhile)
// to ErrEndpointNotFound, its own validation to InvalidError.
func refused(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return ErrEndpointNotFound
	case apierrors.IsInvalid(err):
		return &InvalidError{Fields: map[string][]string{"endpoint": {"The endpoint was refused: " + err.Error()}}}
	}
	return err
}

func checkName(bad *InvalidError, name *string, required bool) string {
	if name == nil {
		if required {
			bad.add("name", "The name is required.")
		}
		return ""
	}
	n := strings.TrimSpace(*name)
	switch {
	case n == "":
		bad.add("name", "The name must not be empty.")
	case utf8.RuneCountInString(n) > NameMaxLength:
		bad.add("name", fmt.Sprintf("The name must be at most %d characters.", NameMaxLength))
	}
	return n
}

func (s *Endpoints) checkURL(ctx context.Context, bad *InvalidError, url *string, required bool) string {
	if url == nil {
		if required {
			bad.add("url", "The url is required.")
		}
		return ""
	}
	u := strings.TrimSpace(*url)
	if err := send.ValidateURL(ctx, u, s.URLPolicy); err != nil {
		bad.add("url", "The url "+err.Error()+".")
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

func checkEvents(bad *InvalidError, evts *[]string, required bool) []switchboardv1alpha1.WebhookEventType {
	if evts == nil {
		if required {
			bad.add("events", "The events are required: one or more of "+strings.Join(Subscribable(), ", ")+".")
		}
		return nil
	}
	if len(*evts) == 0 {
		bad.add("events", "Choose one or more of "+strings.Join(Subscribable(), ", ")+".")
		return nil
	}
	var out []switchboardv1alpha1.WebhookEventType
	for _, e := range *evts {
		if !slices.Contains(Subscribable(), e) {
			bad.add("events", fmt.Sprintf("%q is not an event an endpoint can receive; use %s.", e, strings.Join(Subscribable(), ", ")))
			continue
		}
		if !slices.Contains(out, switchboardv1alpha1.WebhookEventType(e)) {
			out = append(out, switchboardv1alpha1.WebhookEventType(e))
		}
	}
	return out
}

func notActiveWord(ep *switchboardv1alpha1.WebhookEndpoint) string {
	if send.SwitchedOff(ep) {
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
