package faults

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/servetest"
)

// The replicas' Lease settings (servetest's): shorter than the defaults so a takeover fits
// a test.
const (
	leaseDuration = servetest.LeaseDuration
	renewDeadline = servetest.RenewDeadline
	retryPeriod   = servetest.RetryPeriod
	// kubeAPITimeout bounds each of a replica's kube-apiserver requests.
	kubeAPITimeout = servetest.KubeAPITimeout
)

// env is what every scenario shares: the parts servetest runs (one control plane, one
// database, one HTTPS receiver with a path per scenario) and this tree's binary. Scenarios
// run one after another, each with its own account, webhook endpoint and Lease.
type env struct {
	*servetest.Env
	bin string
}

var (
	sharedOnce sync.Once
	shared     *env
	sharedErr  error
	sharedDir  string
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// setup starts the shared environment once (only when a scenario runs, not for -bench).
func setup(t *testing.T) *env {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func start() (*env, error) {
	dir, err := os.MkdirTemp("", "switchboard-faulttest-")
	if err != nil {
		return nil, err
	}
	sharedDir = dir
	bin, err := servetest.Build(dir)
	if err != nil {
		return nil, err
	}
	se, err := servetest.New(dir)
	if err != nil {
		return nil, err
	}
	e := &env{Env: se, bin: bin}
	if _, err := store.Migrate(context.Background(), e.DBURL); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// startReplica runs this tree's `switchboard serve` (leader election on, as an operator
// runs it outside a pod) and waits until it serves.
func (e *env) startReplica(t *testing.T, name, leaseID string, extra ...string) *servetest.Replica {
	t.Helper()
	return e.StartReplica(t, e.bin, name, leaseID, extra...)
}

// leaseHolder is the identity holding a Lease ("" when none).
func (e *env) leaseHolder(ctx context.Context, name string) string {
	holder, _ := e.LeaseHolder(ctx, name)
	return holder
}

// inbox is a scenario's account (its owner key and phone number), its webhook endpoint and
// what the endpoint received.
type inbox struct {
	*servetest.Inbox
	key, number, endpoint string
}

// createEndpoint gives the scenario an account of its own, with one number, and adds a
// webhook endpoint for call.ended to the receiver's path for the scenario. An account per
// scenario keeps scenarios apart (an endpoint left by a scenario that killed its replicas
// neither counts against the next one's five endpoints nor receives its calls).
func (e *env) createEndpoint(t *testing.T, r *servetest.Replica, scenario string) *inbox {
	t.Helper()
	key, number := e.createAccount(t, scenario)
	ep, in := e.CreateEndpoint(t, r, key, scenario)
	return &inbox{Inbox: in, key: key, number: number, endpoint: ep.PublicID}
}

// createAccount adds an account with an owner key and one live number, the next of a range
// no other account uses.
func (e *env) createAccount(t *testing.T, scenario string) (key, number string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, e.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.NewAccount{Name: "Fault test " + scenario, Plan: plans.Business,
		Addons: []string{plans.AddonIntegrations}, TimeZone: "Europe/London"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Owner", Role: "owner",
		Email: "owner+" + acct.PublicID + "@faulttest.example", CanManageAPIKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	created, err := st.CreateAPIKey(ctx, owner.ID, "fault test", auth.Abilities(auth.AllAbilities))
	if err != nil {
		t.Fatal(err)
	}
	number = fmt.Sprintf("+44113496%04d", scenarioNumbers.Add(1))
	if _, err := numbers.New(st, clock.RealClock{}).Provision(ctx, numbers.Provision{Account: acct.PublicID, Number: number}); err != nil {
		t.Fatal(err)
	}
	return created.Token, number
}

// scenarioNumbers numbers the scenarios' accounts' phone numbers.
var scenarioNumbers atomic.Int32

// report sends one ended call (no answer, so no recording) to a replica's platform API and
// returns the call's public id, which the call.ended event carries.
func report(t *testing.T, r *servetest.Replica, in *inbox, ref string) string {
	t.Helper()
	return servetest.ReportCall(t, r, ref, in.number)
}

// tryReport is report for a goroutine other than the test's.
func tryReport(r *servetest.Replica, in *inbox, ref string) (string, error) {
	return servetest.TryReportCall(r, ref, in.number)
}
