package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/billing"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

func ptr[T any](v T) *T { return &v }

// txNow is a fixed time in the middle of a month and a day in London.
var txNow = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

func transcribe(t *testing.T, st *store.Store, accountID int64, call string) store.TranscribeResult {
	t.Helper()
	res, err := st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: accountID, CallPublicID: call, Now: txNow})
	if err != nil {
		t.Fatalf("start transcription of %s: %v", call, err)
	}
	return res
}

func checkMoney(t *testing.T, st *store.Store, accountID int64, wantBalance int64, wantBundle int) {
	t.Helper()
	m := txtest.MoneyOf(t, st, accountID)
	if m.BalancePence != wantBalance || m.BundleMinutes != wantBundle {
		t.Errorf("balance %d, bundle %d; want %d, %d", m.BalancePence, m.BundleMinutes, wantBalance, wantBundle)
	}
	if m.BalancePence != m.LedgerSum {
		t.Errorf("balance %d != sum of ledger %d", m.BalancePence, m.LedgerSum)
	}
}

func allowanceUsed(t *testing.T, st *store.Store, accountID int64, month string) int {
	t.Helper()
	var used int
	err := st.SQL().QueryRow(context.Background(), `SELECT coalesce((SELECT minutes_used FROM transcription_allowance_usage
		WHERE account_id = $1 AND month = $2::date), 0)`, accountID, month).Scan(&used)
	if err != nil {
		t.Fatal(err)
	}
	return used
}

func TestStartTranscriptionChargesAllowanceThenBundleThenBalance(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business) // 300 minutes a month
	acct := tenant.Account.ID
	txtest.Fund(t, st, acct, 100, store.AccountSettings{BundleMinutes: ptr(3), TranscriptionRatePencePerMin: ptr(7)})
	txtest.UseAllowance(t, st, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 298)
	call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 7*60 - 30}) // 7 minutes billed

	res := transcribe(t, st, acct, call.PublicID)
	if res.Outcome != store.TranscribeStarted || res.Status != "pending" || res.SummaryStatus != "pending" {
		t.Fatalf("outcome %+v", res)
	}
	ch := res.Charge
	if ch.Minutes != 7 || ch.AllowanceMinutes != 2 || ch.BundleMinutes != 3 || ch.AmountPence != 14 || ch.JobCreatedAt != nil {
		t.Errorf("charge %+v, want 7 minutes = 2 allowance + 3 bundle + 2 at 7p", ch)
	}
	if ch.CallPublicID != call.PublicID || ch.RecordingPublicID != call.RecordingPublicID || ch.AccountPublicID != tenant.Account.PublicID {
		t.Errorf("charge ids %+v", ch)
	}
	checkMoney(t, st, acct, 86, 0)
	if got := allowanceUsed(t, st, acct, "2026-06-01"); got != 300 {
		t.Errorf("allowance used %d, want 300", got)
	}
	entries, _, err := st.ListLedgerEntries(ctx, acct, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[0]; e.Type != "charge" || e.AmountPence != -14 || e.BalanceAfterPence != 86 ||
		e.Note != "Transcription of call "+call.PublicID+" (2 minutes at 7p)" {
		t.Errorf("ledger entry %+v", e)
	}
	tr, err := st.GetTranscript(ctx, acct, call.RecordingID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status != "pending" || tr.SummaryStatus != "pending" || tr.Minutes != 7 || tr.RatedAmountPence != 14 {
		t.Errorf("transcript %+v", tr)
	}

	// Again: already pending, nothing charged.
	again := transcribe(t, st, acct, call.PublicID)
	if again.Outcome != store.TranscribeExisting || again.Status != "pending" || again.Charge == nil || again.Charge.PublicID != ch.PublicID {
		t.Errorf("second request %+v", again)
	}
	checkMoney(t, st, acct, 86, 0)
}

func TestStartTranscriptionRefusals(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Team) // 60 minutes a month
	acct := tenant.Account.ID
	txtest.UseAllowance(t, st, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 60)
	txtest.Fund(t, st, acct, 12, store.AccountSettings{TranscriptionRatePencePerMin: ptr(5), DailySpendLimitPence: ptr(int64(1000))})

	call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 180}) // 15p, balance 12p
	res := transcribe(t, st, acct, call.PublicID)
	if res.Outcome != store.TranscribeRefused || res.Refusal != billing.RefusedBalance || res.Estimate.CostPence != 15 || res.Price.BalancePence != 12 {
		t.Fatalf("refusal %+v", res)
	}
	checkMoney(t, st, acct, 12, 0)
	if _, err := st.GetTranscript(ctx, acct, call.RecordingID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused transcription left a transcript: %v", err)
	}

	// Daily limit: 10p a day; 2 one-minute calls fit, the third would make 15p.
	txtest.Fund(t, st, acct, 1000, store.AccountSettings{DailySpendLimitPence: ptr(int64(10))})
	for i := range 3 {
		c := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 30})
		res := transcribe(t, st, acct, c.PublicID)
		want := store.TranscribeStarted
		if i == 2 {
			want = store.TranscribeRefused
		}
		if res.Outcome != want {
			t.Fatalf("call %d: %+v, want %s", i, res, want)
		}
		if i == 2 && (res.Refusal != billing.RefusedDailyLimit || res.Price.SpentTodayPence != 10) {
			t.Errorf("third call refusal %+v", res)
		}
	}
	checkMoney(t, st, acct, 1002, 0)

	// Another account's call, a call without a recording, a plan without transcription.
	other := apitest.NewTenant(t, st, plans.Business)
	if _, err := st.StartTranscription(ctx, store.TranscribeRequest{AccountID: other.Account.ID, CallPublicID: call.PublicID, Now: txNow}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other account's call: %v", err)
	}
	bare := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Kind: "none"})
	if _, err := st.StartTranscription(ctx, store.TranscribeRequest{AccountID: acct, CallPublicID: bare.PublicID, Now: txNow}); !errors.Is(err, store.ErrNoRecording) {
		t.Errorf("call without recording: %v", err)
	}
	starter := apitest.NewTenant(t, st, plans.Starter)
	sc := txtest.RecordedCall(t, st, starter.Account.ID, txtest.CallOptions{})
	if _, err := st.StartTranscription(ctx, store.TranscribeRequest{AccountID: starter.Account.ID, CallPublicID: sc.PublicID, Now: txNow}); !errors.Is(err, store.ErrTranscriptionUnavailable) {
		t.Errorf("starter plan: %v", err)
	}
}

func TestSpendDayAndMonthAreInTheAccountsZone(t *testing.T) {
	st := storetest.NewStore(t)
	tenant := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, st, acct, 500, store.AccountSettings{TimeZone: ptr("Pacific/Auckland"), DailySpendLimitPence: ptr(int64(5))})
	txtest.UseAllowance(t, st, acct, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), 300)
	// 30 June 20:00 UTC is 1 July 08:00 in Auckland: the July allowance (used up) and 1 July's spend.
	now := time.Date(2026, 6, 30, 20, 0, 0, 0, time.UTC)
	c1 := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 60})
	res, err := st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: acct, CallPublicID: c1.PublicID, Now: now})
	if err != nil || res.Outcome != store.TranscribeStarted || res.Charge.AmountPence != 5 {
		t.Fatalf("first: %+v %v", res, err)
	}
	var day string
	if err := st.SQL().QueryRow(context.Background(), `SELECT spend_day::text FROM transcription_charges WHERE public_id = $1`, res.Charge.PublicID).Scan(&day); err != nil {
		t.Fatal(err)
	}
	if day != "2026-07-01" {
		t.Errorf("spend_day %s, want 2026-07-01", day)
	}
	// Same Auckland day: the 5p limit is used up.
	c2 := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 60})
	res, err = st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: acct, CallPublicID: c2.PublicID, Now: now.Add(10 * time.Hour)})
	if err != nil || res.Outcome != store.TranscribeRefused || res.Refusal != billing.RefusedDailyLimit {
		t.Fatalf("second: %+v %v", res, err)
	}
	// Next Auckland day (12:00 UTC on 1 July is midnight there): allowed again.
	res, err = st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: acct, CallPublicID: c2.PublicID, Now: now.Add(16 * time.Hour)})
	if err != nil || res.Outcome != store.TranscribeStarted {
		t.Fatalf("next day: %+v %v", res, err)
	}
}

func TestRefundGivesBackEverythingAndAllowsANewCharge(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, st, acct, 100, store.AccountSettings{BundleMinutes: ptr(1), TranscriptionRatePencePerMin: ptr(5), DailySpendLimitPence: ptr(int64(10))})
	txtest.UseAllowance(t, st, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 299)
	call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 4 * 60}) // 1 allowance + 1 bundle + 2 × 5p
	res := transcribe(t, st, acct, call.PublicID)
	if res.Outcome != store.TranscribeStarted || res.Charge.AmountPence != 10 {
		t.Fatalf("%+v", res)
	}
	checkMoney(t, st, acct, 90, 0)

	refunded, err := st.RefundTranscription(ctx, res.Charge.PublicID, "speech to text kept failing", txNow.Add(time.Minute))
	if err != nil || !refunded {
		t.Fatalf("refund: %v %v", refunded, err)
	}
	checkMoney(t, st, acct, 100, 1)
	if got := allowanceUsed(t, st, acct, "2026-06-01"); got != 299 {
		t.Errorf("allowance used %d after refund, want 299", got)
	}
	entries, _, _ := st.ListLedgerEntries(ctx, acct, 10, 0)
	if e := entries[0]; e.Type != "refund" || e.AmountPence != 10 || e.BalanceAfterPence != 100 {
		t.Errorf("refund entry %+v", e)
	}
	tr, _ := st.GetTranscript(ctx, acct, call.RecordingID)
	if tr.Status != "failed" || tr.SummaryStatus != "failed" {
		t.Errorf("transcript after refund %+v", tr)
	}
	ch, _ := st.GetTranscriptionCharge(ctx, res.Charge.PublicID)
	if ch.Status != store.ChargeRefunded {
		t.Errorf("charge status %s", ch.Status)
	}
	// Twice: nothing more.
	if refunded, err := st.RefundTranscription(ctx, res.Charge.PublicID, "again", txNow); err != nil || refunded {
		t.Errorf("second refund: %v %v", refunded, err)
	}
	checkMoney(t, st, acct, 100, 1)

	// The refunded charge no longer counts toward today's limit: a new charge for the same call works.
	again := transcribe(t, st, acct, call.PublicID)
	if again.Outcome != store.TranscribeStarted || again.Charge.PublicID == res.Charge.PublicID || again.Charge.AmountPence != 10 {
		t.Fatalf("retry after failure: %+v", again)
	}
	checkMoney(t, st, acct, 90, 0)
	tr, _ = st.GetTranscript(ctx, acct, call.RecordingID)
	if tr.Status != "pending" {
		t.Errorf("transcript after retry %+v", tr)
	}

	// A completed transcript is not refunded.
	if _, err := st.SaveTranscriptText(ctx, again.Charge.PublicID, store.TranscriptText{Text: "hello", Language: "en"}, txNow); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RefundTranscription(ctx, again.Charge.PublicID, "late", txNow); !errors.Is(err, store.ErrTranscriptCompleted) {
		t.Errorf("refund of a completed transcript: %v", err)
	}
	checkMoney(t, st, acct, 90, 0)
}

func TestConcurrentRequestsForOneCallChargeOnce(t *testing.T) {
	st := storetest.NewStore(t)
	tenant := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID
	txtest.Fund(t, st, acct, 1000, store.AccountSettings{})
	txtest.UseAllowance(t, st, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 120})

	const n = 8
	outcomes := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: acct, CallPublicID: call.PublicID, Now: txNow})
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			outcomes[i] = res.Outcome
		})
	}
	close(start)
	wg.Wait()
	started := 0
	for _, o := range outcomes {
		if o == store.TranscribeStarted {
			started++
		} else if o != store.TranscribeExisting {
			t.Errorf("outcome %q", o)
		}
	}
	if started != 1 {
		t.Errorf("%d requests charged, want 1 (%v)", started, outcomes)
	}
	checkMoney(t, st, acct, 990, 0)
}

func TestConcurrentRequestsForManyCallsKeepMoneyExact(t *testing.T) {
	for _, tc := range []struct {
		name         string
		balance      int64
		dailyLimit   int64
		wantStarted  int
		wantRefusal  string
		wantBalance  int64
		wantSpentDay int64
	}{
		// 100 one-minute calls at 5p: the balance (233p) runs out after 46.
		{"balance", 233, 100000, 46, billing.RefusedBalance, 3, 230},
		// The daily limit (200p) stops it after 40 although the balance could pay for all.
		{"daily limit", 10000, 200, 40, billing.RefusedDailyLimit, 9800, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storetest.NewStore(t)
			tenant := apitest.NewTenant(t, st, plans.Business)
			acct := tenant.Account.ID
			txtest.Fund(t, st, acct, tc.balance, store.AccountSettings{TranscriptionRatePencePerMin: ptr(5), DailySpendLimitPence: ptr(tc.dailyLimit)})
			txtest.UseAllowance(t, st, acct, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
			num := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Kind: "none"}).NumberID
			calls := make([]txtest.Call, 100)
			for i := range calls {
				calls[i] = txtest.RecordedCall(t, st, acct, txtest.CallOptions{Seconds: 45, NumberID: num})
			}
			results := make([]store.TranscribeResult, len(calls))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, c := range calls {
				wg.Go(func() {
					<-start
					res, err := st.StartTranscription(context.Background(), store.TranscribeRequest{AccountID: acct, CallPublicID: c.PublicID, Now: txNow})
					if err != nil {
						t.Errorf("call %d: %v", i, err)
					}
					results[i] = res
				})
			}
			close(start)
			wg.Wait()
			started := 0
			for _, r := range results {
				switch r.Outcome {
				case store.TranscribeStarted:
					started++
				case store.TranscribeRefused:
					if r.Refusal != tc.wantRefusal {
						t.Errorf("refusal %q, want %q", r.Refusal, tc.wantRefusal)
					}
				default:
					t.Errorf("outcome %q", r.Outcome)
				}
			}
			if started != tc.wantStarted {
				t.Errorf("%d started, want %d", started, tc.wantStarted)
			}
			checkMoney(t, st, acct, tc.wantBalance, 0)
			var spent int64
			if err := st.SQL().QueryRow(context.Background(), `SELECT coalesce(sum(amount_pence), 0)::bigint FROM transcription_charges
				WHERE account_id = $1 AND status = 'charged'`, acct).Scan(&spent); err != nil {
				t.Fatal(err)
			}
			if spent != tc.wantSpentDay || spent > tc.dailyLimit {
				t.Errorf("spent %d today, want %d (limit %d)", spent, tc.wantSpentDay, tc.dailyLimit)
			}
		})
	}
}

func TestCompletingAJobWritesOnceWithTodosAndOneEvent(t *testing.T) {
	st := storetest.NewStore(t)
	ctx := context.Background()
	tenant := apitest.NewTenant(t, st, plans.Business)
	acct := tenant.Account.ID
	links := events.Links{APIBaseURL: "https://api.example.test", DashboardURL: "https://app.example.test"}

	for _, kind := range []string{"call", "voicemail"} {
		call := txtest.RecordedCall(t, st, acct, txtest.CallOptions{Kind: kind})
		res := transcribe(t, st, acct, call.PublicID)
		if res.Outcome != store.TranscribeStarted {
			t.Fatalf("%s: %+v", kind, res)
		}
		chg := res.Charge.PublicID
		// The summary needs the text first.
		if _, err := st.CompleteTranscriptSummary(ctx, chg, store.TranscriptSummary{Status: "completed"}, links, txNow); err == nil {
			t.Errorf("%s: summary before text accepted", kind)
		}
		segs := []store.TranscriptSegment{{StartSeconds: 0, EndSeconds: 2.5, Speaker: "caller", Text: "Hello."}, {StartSeconds: 2.5, EndSeconds: 5, Speaker: "caller", Text: "Call me back."}}
		saved, err := st.SaveTranscriptText(ctx, chg, store.TranscriptText{Text: "Hello. Call me back.", Language: "en", Segments: segs}, txNow)
		if err != nil || !saved {
			t.Fatalf("save text: %v %v", saved, err)
		}
		if saved, err := st.SaveTranscriptText(ctx, chg, store.TranscriptText{Text: "other"}, txNow); err != nil || saved {
			t.Errorf("second save: %v %v", saved, err)
		}
		sum := store.TranscriptSummary{Status: "completed", Summary: "Caller wants a call back.", Intent: "callback_request",
			Sentiment: "neutral", Urgency: "high", ActionItems: []string{"Call back Sam", "Send the quote"}, CallbackNumber: ptr("+447700900123")}
		for i := range 2 {
			done, err := st.CompleteTranscriptSummary(ctx, chg, sum, links, txNow)
			if err != nil || done != (i == 0) {
				t.Fatalf("%s: complete #%d: %v %v", kind, i, done, err)
			}
		}
		tr, err := st.GetTranscript(ctx, acct, call.RecordingID)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Status != "completed" || tr.SummaryStatus != "completed" || tr.Text != "Hello. Call me back." || len(tr.Segments) != 2 ||
			*tr.Urgency != "high" || len(tr.ActionItems) != 2 || *tr.CallbackNumber != "+447700900123" {
			t.Errorf("%s: transcript %+v", kind, tr)
		}
		var tasks, evs int
		if err := st.SQL().QueryRow(ctx, `SELECT (SELECT count(*) FROM tasks WHERE call_id = $1 AND callback_e164 = '+447700900123'),
				(SELECT count(*) FROM events WHERE call_id = $1 AND type = 'transcript.ready')`, call.ID).Scan(&tasks, &evs); err != nil {
			t.Fatal(err)
		}
		wantEvents := 1
		if kind == "voicemail" {
			wantEvents = 0
		}
		if tasks != 2 || evs != wantEvents {
			t.Errorf("%s: %d to-dos and %d transcript.ready events, want 2 and %d", kind, tasks, evs, wantEvents)
		}
	}
}
