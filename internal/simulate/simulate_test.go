package simulate_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/simulate"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// The simulator's reports all land: what it says it sent is what the database holds.
func TestSimulatedTrafficIsStored(t *testing.T) {
	ctx := context.Background()
	st := storetest.NewStore(t)
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Sim Ltd", Plan: plans.Business})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateNumber(ctx, store.NewNumber{AccountID: acct.ID, E164: "+442079460777"}); err != nil {
		t.Fatal(err)
	}
	recordings, err := recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ingest.New(ingest.Config{Token: "tok", LinkSigningKey: make([]byte, 32), Recordings: recordings,
		Links: events.Links{APIBaseURL: "http://api.test", DashboardURL: "http://app.test"}, Log: logr.Discard()}, st))
	defer srv.Close()

	totals, err := simulate.Run(ctx, simulate.Options{PlatformURL: srv.URL, Token: "tok", Rate: 500, Count: 40, Seed: 3, Clock: clock.RealClock{}})
	if err != nil {
		t.Fatal(err)
	}
	if totals.Failures != 0 || totals.Calls+totals.Voicemails+totals.Texts+totals.Slips != 40 || totals.Calls == 0 || totals.Voicemails == 0 {
		t.Fatalf("totals %+v", totals)
	}
	var calls, voicemails, texts, slips int
	err = storetest.SQL(t, st).QueryRow(ctx, `SELECT (SELECT count(*) FROM calls), (SELECT count(*) FROM recordings WHERE kind = 'voicemail'),
		(SELECT count(*) FROM sms_messages), (SELECT count(*) FROM message_slips)`).Scan(&calls, &voicemails, &texts, &slips)
	if err != nil {
		t.Fatal(err)
	}
	if calls != totals.Calls+totals.Voicemails || voicemails != totals.Voicemails || texts != totals.Texts || slips != totals.Slips {
		t.Errorf("stored %d calls, %d voicemails, %d texts, %d slips for %+v", calls, voicemails, texts, slips, totals)
	}

	// A wrong token is reported, not ignored.
	if _, err := simulate.Run(ctx, simulate.Options{PlatformURL: srv.URL, Token: "nope", Count: 1}); err == nil {
		t.Error("a wrong token did not fail the simulation")
	}
}
