// Package storetest gives each test its own freshly migrated database on one throwaway
// PostgreSQL cluster per test binary (started on first use, stopped by Main or Shutdown).
package storetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/pgcluster"
	"github.com/switchboard-dev/switchboard/internal/store"
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
	s, err := store.Open(context.Background(), NewDatabaseURL(tb))
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
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
