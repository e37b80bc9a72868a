// Package storetest gives each test its own freshly migrated database on one throwaway
// PostgreSQL cluster per test binary (started on first use, stopped by Main or Shutdown), and
// SQL: a test's own handle on that database for rows the test sets up or inspects directly.
//
// Only tests and test-support packages import storetest (internal/store's imports test checks
// it), so service code can reach PostgreSQL only through the store's methods.
package storetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/pgcluster"
)

const templateDB = "switchboard_template"

var (
	once     sync.Once
	cluster  *pgcluster.Cluster
	startErr error
	dbCount  atomic.Int64
)

// TB is the part of testing.TB (and GinkgoT()) used here.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

func shared() (*pgcluster.Cluster, error) {
	once.Do(func() {
		ctx := context.Background()
		cluster, startErr = pgcluster.Start(ctx)
		if startErr != nil {
			return
		}
		if startErr = cluster.CreateDatabase(ctx, templateDB, ""); startErr != nil {
			return
		}
		_, startErr = store.Migrate(ctx, cluster.URL(templateDB))
	})
	return cluster, startErr
}

// NewDatabaseURL creates an empty, fully migrated database and returns its URL.
func NewDatabaseURL(tb TB) string {
	tb.Helper()
	c, err := shared()
	if err != nil {
		tb.Fatalf("start PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbCount.Add(1))
	if err := c.CreateDatabase(context.Background(), name, templateDB); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return c.URL(name)
}

// NewEmptyDatabaseURL creates an empty database (no migration applied) and returns its URL:
// for tests of the migrations themselves.
func NewEmptyDatabaseURL(tb TB) string {
	tb.Helper()
	c, err := shared()
	if err != nil {
		tb.Fatalf("start PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbCount.Add(1))
	if err := c.CreateDatabase(context.Background(), name, ""); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return c.URL(name)
}

// NewStore opens a store on a new database, closed when the test ends.
func NewStore(tb TB) *store.Store {
	tb.Helper()
	return Open(tb, NewDatabaseURL(tb))
}

// opened is the database URL of each store Open made, for SQL.
var opened sync.Map // *store.Store -> *testDatabase

type testDatabase struct {
	url  string
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// Open opens a store on the database at url, closed when the test ends; SQL reaches the same
// database.
func Open(tb TB, url string) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	db := &testDatabase{url: url}
	opened.Store(s, db)
	tb.Cleanup(func() {
		opened.Delete(s)
		if db.pool != nil {
			db.pool.Close()
		}
		s.Close()
	})
	return s
}

// SQL is the test's own connection pool on the database of st (a store from NewStore or Open),
// for rows a test sets up or inspects directly; it closes with st. What the service itself needs
// is a store method, never SQL.
func SQL(tb interface {
	Helper()
	Fatalf(format string, args ...any)
}, st *store.Store) *pgxpool.Pool {
	tb.Helper()
	v, ok := opened.Load(st)
	if !ok {
		tb.Fatalf("storetest.SQL: the store was not opened by storetest.NewStore or storetest.Open")
	}
	db := v.(*testDatabase)
	db.once.Do(func() { db.pool, db.err = pgxpool.New(context.Background(), db.url) })
	if db.err != nil {
		tb.Fatalf("open a pool for the test's SQL: %v", db.err)
	}
	return db.pool
}

// Shutdown stops the shared cluster if one was started.
func Shutdown() {
	if cluster != nil {
		_ = cluster.Stop()
	}
}

// Main runs the tests of a package and then stops the cluster: call it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	Shutdown()
	return code
}
