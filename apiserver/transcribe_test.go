package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/serve"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

// transcribeNow is the fake "now" of the transcribe tests: mid-June, midday in London.
var transcribeNow = time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC)

// newTranscribeHarness is a harness on a fake clock whose Kube is an in-memory client (the
// real job creation against a kube-apiserver is covered by the controllers' envtest suite).
func newTranscribeHarness(t *testing.T) (*harness, client.Client) {
	t.Helper()
	kube := fake.NewClientBuilder().WithScheme(serve.Scheme()).Build()
	h := newHarness(t, func(c *apiserver.Config) {
		c.Clock = clocktesting.NewFakeClock(transcribeNow)
		c.RequestsPerMinute = 100000
		c.Kube = kube
	})
	return h, kube
}

func int64p(v int64) *int64 { return &v }
func intp(v int) *int       { return &v }

func TestTranscribeCallStartsOnceAndCreatesTheJob(t *testing.T) {
	h, kube := newTranscribeHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, h.store, acct, 1000, store.AccountSettings{TranscriptionRatePencePerMin: intp(6), BundleMinutes: intp(1)})
	txtest.UseAllowance(t, h.store, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 299)
	call := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Seconds: 200}) // 4 minutes: 1 + 1 + 2 × 6p

	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil)
	if resp.Status != http.StatusAccepted {
		t.Fatalf("transcribe: %s", resp)
	}
	want := `{"call_public_id":"` + call.PublicID + `","status":"pending","summary_status":"pending"}`
	want = string(compactJSON(t, []byte(want)))
	if got := string(compactJSON(t, resp.Body)); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	m := txtest.MoneyOf(t, h.store, acct)
	if m.BalancePence != 988 || m.LedgerSum != 988 || m.BundleMinutes != 0 {
		t.Errorf("money after the charge %+v", m)
	}

	// The job, named after the charge, in the account's namespace.
	var chargeID string
	var jobCreated *time.Time
	if err := storetest.SQL(t, h.store).QueryRow(ctx, `SELECT public_id, job_created_at FROM transcription_charges WHERE call_id = $1`, call.ID).Scan(&chargeID, &jobCreated); err != nil {
		t.Fatal(err)
	}
	if jobCreated == nil || !jobCreated.Equal(transcribeNow) {
		t.Errorf("job_created_at %v, want %v", jobCreated, transcribeNow)
	}
	var job switchboardv1alpha1.TranscriptionJob
	key := types.NamespacedName{Namespace: tenancy.Namespace(tenant.Account.PublicID), Name: transcription.JobName(chargeID)}
	if err := kube.Get(ctx, key, &job); err != nil {
		t.Fatalf("job %s: %v", key, err)
	}
	wantSpec := switchboardv1alpha1.TranscriptionJobSpec{AccountID: tenant.Account.PublicID, CallPublicID: call.PublicID,
		RecordingPublicID: call.RecordingPublicID, ChargeID: chargeID, ChargedMinutes: 4, ChargedAmountPence: 12,
		AllowanceMinutes: 1, BundleMinutes: 1}
	if job.Spec != wantSpec {
		t.Errorf("job spec %+v\nwant %+v", job.Spec, wantSpec)
	}

	// Again: 202 with the statuses, no charge.
	resp = h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", "{}")
	if resp.Status != http.StatusAccepted || string(compactJSON(t, resp.Body)) != want {
		t.Errorf("second transcribe: %s", resp)
	}
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 988 || m.LedgerEntries != 2 {
		t.Errorf("money after a second request %+v", m)
	}
	// The call shows the pending transcript.
	resp = h.api.Do(t, tenant.OwnerKey, "GET", "/v1/calls/"+call.PublicID, nil)
	tr, _ := resp.Map(t)["transcript"].(map[string]any)
	if tr["status"] != "pending" || tr["summary_status"] != "pending" {
		t.Errorf("call transcript %v", tr)
	}
	// And once it is completed, a request still answers 202 with completed, no charge.
	if _, err := h.store.SaveTranscriptText(ctx, chargeID, store.TranscriptText{Text: "Hi", Language: "en"}, transcribeNow); err != nil {
		t.Fatal(err)
	}
	resp = h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil)
	if resp.Status != http.StatusAccepted || resp.Map(t)["status"] != "completed" {
		t.Errorf("transcribe a transcribed call: %s", resp)
	}
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 988 || m.LedgerEntries != 2 {
		t.Errorf("money after a request for a transcribed call %+v", m)
	}
}

func TestTranscribeCallPaymentRequired(t *testing.T) {
	h, _ := newTranscribeHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, h.store, acct, 20, store.AccountSettings{TranscriptionRatePencePerMin: intp(5), BundleMinutes: intp(2), DailySpendLimitPence: int64p(100)})
	txtest.UseAllowance(t, h.store, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	call := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Seconds: 301}) // 6 minutes: 2 bundle + 4 × 5p = 20p

	// 20p would be exactly affordable: take a penny away.
	if err := h.store.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ApplyLedgerEntry(context.Background(), acct, store.LedgerAdjustment, -1, "test", "", transcribeNow)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil)
	if resp.Status != http.StatusPaymentRequired {
		t.Fatalf("transcribe: %s", resp)
	}
	want := `{"message":"The prepaid balance (£0.19) cannot cover this transcription (4 minutes from the balance at 5p a minute = £0.20). Top up the balance and try again.",` +
		`"estimate":{"available":true,"minutes":6,"cost_pence":20,"rate_pence_per_min":5,"within_allowance":false,"bundle_minutes":2,` +
		`"balance_pence":19,"affordable":false,"existing_status":null}}`
	want = string(compactJSON(t, []byte(want)))
	if got := string(compactJSON(t, resp.Body)); got != want {
		t.Errorf("402 body\n got  %s\n want %s", got, want)
	}
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 19 || m.BundleMinutes != 2 {
		t.Errorf("a refused request changed money: %+v", m)
	}
	// The estimate says the same.
	est := h.api.Do(t, tenant.OwnerKey, "GET", "/v1/recordings/"+call.RecordingPublicID+"/transcript/estimate", nil)
	var body map[string]json.RawMessage
	resp.JSON(t, &body)
	if got, want := string(compactJSON(t, est.Body)), string(compactJSON(t, body["estimate"])); got != want {
		t.Errorf("estimate %s, 402 estimate %s", got, want)
	}

	// Daily limit: balance plenty, limit 15p.
	txtest.Fund(t, h.store, acct, 1000, store.AccountSettings{DailySpendLimitPence: int64p(15)})
	resp = h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil)
	if resp.Status != http.StatusPaymentRequired {
		t.Fatalf("transcribe over the daily limit: %s", resp)
	}
	if msg := resp.Map(t)["message"]; msg != "This transcription (£0.20) would pass the account's daily spending limit of £0.15 (£0.15 left today). Try again tomorrow or raise the limit." {
		t.Errorf("daily limit message %q", msg)
	}
	txtest.Fund(t, h.store, acct, 0, store.AccountSettings{DailySpendLimitPence: int64p(20)})
	if resp := h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+call.PublicID+"/transcribe", nil); resp.Status != http.StatusAccepted {
		t.Errorf("transcribe at exactly the limit: %s", resp)
	}
}

func TestTranscribeCallRefusals(t *testing.T) {
	h, _ := newTranscribeHarness(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, h.store, acct, 1000, store.AccountSettings{})
	call := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{})
	path := "/v1/calls/" + call.PublicID + "/transcribe"
	post := func(key, p string) *apitest.Response { return h.api.Do(t, key, "POST", p, nil) }
	expect := func(name string, resp *apitest.Response, status int) {
		t.Helper()
		if resp.Status != status {
			t.Errorf("%s: %s, want %d", name, resp, status)
		}
	}

	readKey := apitest.NewKey(t, h.store, tenant.Owner.ID, "read")
	expect("key without transcribe", post(readKey, path), http.StatusForbidden)

	member := tenant.NewMember(t, h.store, true, true)
	memberKey := apitest.NewKey(t, h.store, member.ID, "transcribe")
	autoMember := apitest.NewKey(t, h.store, member.ID, "auto-transcribe")
	if _, err := storetest.SQL(t, h.store).Exec(ctx, `UPDATE users SET can_transcribe = false WHERE id = $1`, member.ID); err != nil {
		t.Fatal(err)
	}
	expect("member no longer allowed", post(memberKey, path), http.StatusForbidden)
	expect("member no longer allowed (auto key)", post(autoMember, path), http.StatusForbidden)

	bare := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Kind: "none"})
	resp := post(tenant.OwnerKey, "/v1/calls/"+bare.PublicID+"/transcribe")
	expect("call without recording", resp, http.StatusUnprocessableEntity)
	if resp.Map(t)["message"] != "The call has no recording to transcribe." {
		t.Errorf("422 body %s", resp)
	}
	deleted := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{})
	if err := deleteRecording(t, h.store, acct, deleted.RecordingPublicID, transcribeNow); err != nil {
		t.Fatal(err)
	}
	expect("call whose recording was deleted", post(tenant.OwnerKey, "/v1/calls/"+deleted.PublicID+"/transcribe"), http.StatusUnprocessableEntity)

	expect("unknown call", post(tenant.OwnerKey, "/v1/calls/call_nope/transcribe"), http.StatusNotFound)
	other := apitest.NewTenant(t, h.store, plans.Business)
	expect("other account's call", post(other.OwnerKey, path), http.StatusNotFound)

	team := apitest.NewTenant(t, h.store, plans.Team)
	teamCall := txtest.RecordedCall(t, h.store, team.Account.ID, txtest.CallOptions{})
	resp = post(team.OwnerKey, "/v1/calls/"+teamCall.PublicID+"/transcribe")
	expect("team without the add-on", resp, http.StatusForbidden)
	if resp.Map(t)["reason"] != plans.ReasonAddonRequired {
		t.Errorf("add-on refusal %s", resp)
	}

	off := apitest.NewTenant(t, h.store, plans.Business)
	offCall := txtest.RecordedCall(t, h.store, off.Account.ID, txtest.CallOptions{})
	txtest.Fund(t, h.store, off.Account.ID, 0, store.AccountSettings{TranscriptionDisabled: boolp(true)})
	expect("transcription switched off", post(off.OwnerKey, "/v1/calls/"+offCall.PublicID+"/transcribe"), http.StatusForbidden)

	expect("a body that is not JSON", h.api.Do(t, tenant.OwnerKey, "POST", path, "not json"), http.StatusBadRequest)

	// None of these charged anything.
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 1000 || m.LedgerEntries != 1 {
		t.Errorf("refusals changed money: %+v", m)
	}
	// The owner's transcribe-only key works.
	ownerTranscribe := apitest.NewKey(t, h.store, tenant.Owner.ID, "transcribe")
	expect("owner transcribe key", post(ownerTranscribe, path), http.StatusAccepted)
}

func boolp(v bool) *bool { return &v }

func TestTranscribeCallConcurrentRequestsKeepMoneyExact(t *testing.T) {
	h, _ := newTranscribeHarness(t)
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, h.store, acct, 117, store.AccountSettings{TranscriptionRatePencePerMin: intp(5)})
	txtest.UseAllowance(t, h.store, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	num := txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Kind: "none"}).NumberID
	calls := make([]txtest.Call, 30)
	for i := range calls {
		calls[i] = txtest.RecordedCall(t, h.store, acct, txtest.CallOptions{Seconds: 60, NumberID: num})
	}
	var wg sync.WaitGroup
	statuses := make([]int, 2*len(calls))
	for i := range statuses {
		wg.Go(func() {
			// Each call twice, at once.
			statuses[i] = h.api.Do(t, tenant.OwnerKey, "POST", "/v1/calls/"+calls[i/2].PublicID+"/transcribe", nil).Status
		})
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	// 117p pays 23 one-minute transcriptions: both requests of those 23 calls answer 202, the
	// 7 others are refused twice.
	if counts[http.StatusAccepted] != 46 || counts[http.StatusPaymentRequired] != 14 {
		t.Errorf("statuses %v", counts)
	}
	if m := txtest.MoneyOf(t, h.store, acct); m.BalancePence != 2 || m.LedgerSum != 2 || m.LedgerEntries != 24 {
		t.Errorf("money %+v, want 2p left after 23 charges", m)
	}
}

func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
