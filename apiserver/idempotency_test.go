package apiserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

func withKey(key string) http.Header { return http.Header{"Idempotency-Key": {key}} }

func idempotencyErrors(t *testing.T, resp *apitest.Response) []string {
	t.Helper()
	var body struct {
		Message string              `json:"message"`
		Errors  map[string][]string `json:"errors"`
	}
	resp.JSON(t, &body)
	if body.Message == "" || len(body.Errors["Idempotency-Key"]) == 0 {
		t.Errorf("422 does not name the Idempotency-Key header: %s", resp)
	}
	return body.Errors["Idempotency-Key"]
}

func TestIdempotencyReplaysTheFirstAnswer(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	other := apitest.NewTenant(t, h.store, plans.Business)
	body := map[string]any{"display_name": "Ada Lovelace", "phones": phones("+447700900123")}

	first := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("create-ada"))
	if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %s %v", first, first.Header)
	}
	fc.Step(time.Hour)
	again := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("create-ada"))
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %s %v", again, again.Header)
	}
	if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
		t.Errorf("replayed body %s, want %s", again.Body, first.Body)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 1 {
		t.Errorf("%d contacts after a repeat, want 1", n)
	}

	// The same key with another body, or on another route, is refused and does nothing.
	changed := map[string]any{"display_name": "Ada King", "phones": phones("+447700900123")}
	resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", changed, withKey("create-ada"))
	if resp.Status != http.StatusUnprocessableEntity || !strings.Contains(idempotencyErrors(t, resp)[0], "another body") {
		t.Errorf("other body: %s", resp)
	}
	resp = h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts/bulk-upsert",
		map[string]any{"source": "crm", "contacts": bulkContacts(1, "x")}, withKey("create-ada"))
	if resp.Status != http.StatusUnprocessableEntity || !strings.Contains(idempotencyErrors(t, resp)[0], "another request path") {
		t.Errorf("other route: %s", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 1 {
		t.Errorf("%d contacts after refused repeats, want 1", n)
	}

	// Another account's same key is its own.
	resp = h.api.DoWithHeaders(t, other.OwnerKey, "POST", "/v1/contacts", body, withKey("create-ada"))
	if resp.Status != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(resp.Body, first.Body) {
		t.Errorf("other account: %s %v", resp, resp.Header)
	}
	if n := countContacts(t, h, other.Account.ID); n != 1 {
		t.Errorf("other account has %d contacts, want 1", n)
	}

	// After 24 hours the key is forgotten: the work is done again.
	fc.Step(23*time.Hour + time.Second)
	resp = h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("create-ada"))
	if resp.Status != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(resp.Body, first.Body) {
		t.Errorf("after expiry: %s %v", resp, resp.Header)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 2 {
		t.Errorf("%d contacts after the key expired, want 2", n)
	}
}

func TestIdempotencyKeepsRefusalsButNotConflicts(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	// A 422 of the route itself is an answer that ran to its end: replayed.
	bad := map[string]any{"display_name": strings.Repeat("x", 1000), "phones": phones()}
	first := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", bad, withKey("bad-body"))
	again := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", bad, withKey("bad-body"))
	if first.Status != http.StatusUnprocessableEntity || again.Status != first.Status ||
		again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Errorf("422 then %s %v", again, again.Header)
	}
}

func TestIdempotencyBadKeys(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	body := map[string]any{"display_name": "Grace Hopper", "phones": phones()}
	for name, key := range map[string]string{
		"empty":     "",
		"too long":  strings.Repeat("k", 256),
		"tab":       "a\tb",
		"non-ASCII": "clé",
	} {
		resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey(key))
		if resp.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %s", name, resp)
			continue
		}
		idempotencyErrors(t, resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 0 {
		t.Errorf("%d contacts made by requests with bad keys", n)
	}
	if resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey(strings.Repeat("k", 255))); resp.Status != http.StatusCreated {
		t.Errorf("255-character key: %s", resp)
	}
}

func TestIdempotencyInFlightRepeatIsConflict(t *testing.T) {
	h, fc := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	body := map[string]any{"display_name": "Alan Turing", "phones": phones()}
	data, _ := json.Marshal(body)
	sum := sha256.Sum256(data)
	// A first request that claimed the key and is still running (its lease has not run out).
	claim, err := h.store.ClaimIdempotencyKey(context.Background(), store.IdempotencyRequest{
		AccountID: tenant.Account.ID, Key: "turing", Route: "POST /v1/contacts/", BodySHA256: sum[:],
	}, fc.Now(), 5*time.Minute, 24*time.Hour)
	if err != nil || claim.Outcome != store.ClaimGranted {
		t.Fatalf("claim: %+v %v", claim, err)
	}
	resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("turing"))
	if resp.Status != http.StatusConflict {
		t.Errorf("in-flight repeat: %s", resp)
	}
	if n := countContacts(t, h, tenant.Account.ID); n != 0 {
		t.Errorf("the in-flight repeat made %d contacts", n)
	}
	// The first request died before committing anything; after its lease a repeat does the work.
	fc.Step(5 * time.Minute)
	resp = h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("turing"))
	if resp.Status != http.StatusCreated || countContacts(t, h, tenant.Account.ID) != 1 {
		t.Errorf("repeat after the lease: %s", resp)
	}
}

func TestIdempotencyConcurrentContactCreatesMakeOneContact(t *testing.T) {
	h, _ := newContactsHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	body := map[string]any{"display_name": "Katherine Johnson", "phones": phones("+447700900456")}
	const n = 16
	resps := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	for i := range resps {
		wg.Go(func() {
			resps[i] = h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/contacts", body, withKey("kj"))
		})
	}
	wg.Wait()
	var created []byte
	for _, r := range resps {
		switch r.Status {
		case http.StatusCreated:
			if created != nil && !bytes.Equal(r.Body, created) {
				t.Errorf("two different 201s: %s and %s", created, r.Body)
			}
			created = r.Body
		case http.StatusConflict:
		default:
			t.Errorf("concurrent repeat: %s", r)
		}
	}
	if created == nil {
		t.Error("no request created the contact")
	}
	if c := countContacts(t, h, tenant.Account.ID); c != 1 {
		t.Errorf("%d contacts from %d repeats of one key, want 1", c, n)
	}
}

func TestIdempotencyConcurrentTranscribesChargeOnce(t *testing.T) {
	h, _ := newTranscribeHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, h.store, acct, 1000, store.AccountSettings{TranscriptionRatePencePerMin: intp(6)})
	txtest.UseAllowance(t, h.store, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	call := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Seconds: 150}) // 3 minutes × 6p
	const n = 12
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil, withKey("tx-1")).Status
		})
	}
	wg.Wait()
	for _, s := range statuses {
		if s != http.StatusAccepted && s != http.StatusConflict {
			t.Errorf("statuses %v", statuses)
			break
		}
	}
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 982 || m.LedgerSum != 982 || m.LedgerEntries != 2 {
		t.Errorf("money %+v, want one 18p charge from 1000p", m)
	}
	resp := h.api.DoWithHeaders(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil, withKey("tx-1"))
	if resp.Status != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("repeat: %s %v", resp, resp.Header)
	}
}

// notIdempotent are the POST routes that take no Idempotency-Key, each for the reason
// docs/api-decisions.md gives ("Idempotent POSTs").
var notIdempotent = map[string]bool{
	// A replayed signature would come without the grant the first request recorded and a
	// subscription consumed; a plain repeat records it again and signs the same.
	"/v1/realtime/auth": true,
}

func TestEveryPostRouteDeclaresIdempotencyKey(t *testing.T) {
	// Every resource the service serves, as the published description has them.
	c := apiserver.New(apiserver.Config{Log: logr.Discard(), Clock: clocktesting.NewFakeClock(contactsEpoch)}, nil,
		apiserver.Webhooks(apiserver.WebhooksConfig{}), apiserver.Realtime(apiserver.RealtimeConfig{}))
	var posts []string
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			if r.Method != http.MethodPost {
				continue
			}
			posts = append(posts, strings.TrimSuffix(r.Path, "/"))
			declared := false
			for _, p := range r.ParameterDocs {
				if p.Data().Name == "Idempotency-Key" {
					declared = true
				}
			}
			_, conflict := r.ResponseErrors[http.StatusConflict]
			_, invalid := r.ResponseErrors[http.StatusUnprocessableEntity]
			work := apiserver.IdempotentWork(r)
			if notIdempotent[r.Path] {
				if declared || conflict || work != "" {
					t.Errorf("POST %s is documented as taking no Idempotency-Key, but declares it %v, 409 %v, work %q", r.Path, declared, conflict, work)
				}
				continue
			}
			if !declared || !conflict || !invalid || (work != "store" && work != "kube") {
				t.Errorf("POST %s: Idempotency-Key declared %v, 409 %v, 422 %v, work %q", r.Path, declared, conflict, invalid, work)
			}
		}
	}

	published, err := apiserver.PublishedOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(published, &doc); err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, ops := range doc.Paths {
		if _, ok := ops["post"]; ok {
			described = append(described, apiserver.APIRoot+path)
		}
	}
	slices.Sort(posts)
	slices.Sort(described)
	if !slices.Equal(posts, described) {
		t.Errorf("the POST routes checked here are not the published ones: register every resource\nchecked:   %v\npublished: %v", posts, described)
	}
	for path := range notIdempotent {
		if !slices.Contains(posts, path) {
			t.Errorf("POST %s is listed as taking no Idempotency-Key but is not a route", path)
		}
	}
}
