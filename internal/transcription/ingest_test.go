package transcription_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
	"github.com/switchboard-dev/switchboard/test/support/txtest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// A recorded call reported by the platform is transcribed automatically through ingestion's
// RecordedCall hook (as app.Run wires it); a voicemail and a call on a privacy-mode number are not.
func TestPlatformRecordedCallsAreAutoTranscribed(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	clock := clocktesting.NewFakeClock(time.Date(2026, 6, 15, 11, 0, 0, 0, time.UTC))
	recordings, err := recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tenant := apitest.NewTenant(t, st, plans.Business) // its owner key holds auto-transcribe
	txtest.Fund(t, st, tenant.Account.ID, 1000, store.AccountSettings{})
	txtest.UseAllowance(t, st, tenant.Account.ID, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300)
	for _, n := range []store.NewNumber{{AccountID: tenant.Account.ID, E164: "+442079460555"},
		{AccountID: tenant.Account.ID, E164: "+442079460556", PrivacyModeEnabled: true}} {
		if _, err := st.CreateNumber(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	kube := fake.NewClientBuilder().WithScheme(app.Scheme()).Build()
	links := events.Links{APIBaseURL: "https://api.example.test", DashboardURL: "https://app.example.test"}
	svc := &transcription.Service{Store: st, Kube: kube, Clock: clock, Links: links, Log: logr.Discard()}
	srv := httptest.NewServer(ingest.New(ingest.Config{Token: "tok", LinkSigningKey: []byte("a link signing key of 32 bytes!!"),
		Recordings: recordings, Clock: clock, Log: logr.Discard(), Links: links, RecordedCall: svc.RecordedCall}, st))
	defer srv.Close()

	report := func(ref, to, kind string) string {
		t.Helper()
		body, _ := json.Marshal(ingest.CallReport{PlatformRef: ref, To: to, From: "+447700900123", Disposition: "answered",
			StartedAt: clock.Now().Add(-time.Minute), DurationSeconds: 60, TalkSeconds: 60,
			Recording: &ingest.RecordingReport{Kind: kind, DurationSeconds: 60, AudioBase64: base64.StdEncoding.EncodeToString([]byte("RIFF"))}})
		req, _ := http.NewRequest("POST", srv.URL+"/platform/v1/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var receipt ingest.CallReceipt
		if err := json.NewDecoder(resp.Body).Decode(&receipt); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("report %s: %d %v", ref, resp.StatusCode, err)
		}
		return receipt.CallPublicID
	}
	recorded := report("p1", "+442079460555", "call")
	voicemail := report("p2", "+442079460555", "voicemail")
	private := report("p3", "+442079460556", "call")

	charged := map[string]bool{}
	rows, err := storetest.SQL(t, st).Query(ctx, `SELECT c.public_id, ch.automatic, ch.job_created_at IS NOT NULL FROM transcription_charges ch
		JOIN calls c ON c.id = ch.call_id WHERE ch.account_id = $1`, tenant.Account.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var automatic, job bool
		if err := rows.Scan(&id, &automatic, &job); err != nil {
			t.Fatal(err)
		}
		charged[id] = automatic && job
	}
	if len(charged) != 1 || !charged[recorded] || charged[voicemail] || charged[private] {
		t.Errorf("automatic charges with jobs %v; want only the recorded call %s", charged, recorded)
	}
	if m := txtest.MoneyOf(t, st, tenant.Account.ID); m.BalancePence != 995 || m.LedgerSum != 995 {
		t.Errorf("money %+v", m)
	}
}
