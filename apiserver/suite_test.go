package apiserver_test

import (
	"net/http/httptest"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// harness is one API server on its own fresh database.
type harness struct {
	store *store.Store
	api   *apitest.API
}

// newHarness starts the facade over real HTTP on a fresh database.
func newHarness(t *testing.T, opts ...func(*apiserver.Config)) *harness {
	t.Helper()
	st := storetest.NewStore(t)
	return newHarnessOn(t, st, opts...)
}

func newHarnessOn(t *testing.T, st *store.Store, opts ...func(*apiserver.Config)) *harness {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg := apiserver.Config{BaseURL: "http://" + srv.Listener.Addr().String(), Clock: clock.RealClock{}, Log: logr.Discard()}
	for _, o := range opts {
		o(&cfg)
	}
	srv.Config.Handler = apiserver.New(cfg, st)
	srv.Start()
	t.Cleanup(srv.Close)
	return &harness{store: st, api: apitest.New(srv.URL)}
}
