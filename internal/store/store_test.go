package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestMigrateIsIdempotent(t *testing.T) {
	url := storetest.NewDatabaseURL(t)
	applied, err := store.Migrate(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("second migration run applied %v, want nothing", applied)
	}
}

// Replicas started together migrate at once: each waits for the first and none fails.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	base := storetest.NewDatabaseURL(t)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("empty_%d", time.Now().UnixNano())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	const replicas = 4
	var wg sync.WaitGroup
	applied := make([][]int64, replicas)
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() { applied[i], errs[i] = store.Migrate(ctx, u.String()) })
	}
	wg.Wait()
	total := 0
	for i := range replicas {
		if errs[i] != nil {
			t.Errorf("replica %d: %v", i, errs[i])
		}
		total += len(applied[i])
		if len(applied[i]) != 0 && total != len(applied[i]) {
			t.Errorf("two replicas applied migrations: %v", applied)
		}
	}
	if total == 0 {
		t.Error("no replica applied the migrations")
	}
}

// An operator sizes the pool in DATABASE_URL (pool_max_conns, docs/operations.md) and serve
// migrates, listens and opens its pool with that one URL: each must accept the pool's
// parameters rather than send them to the server, which refuses unknown settings.
func TestDatabaseURLWithPoolParameters(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewEmptyDatabaseURL(t) + "&pool_max_conns=7&pool_min_conns=1"
	if _, err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	if got := st.SQL().Config().MaxConns; got != 7 {
		t.Errorf("pool of %d connections, want the URL's 7", got)
	}
	listening := errors.New("listening")
	if err := store.ListenRealtime(ctx, url, func() error { return listening }, func([]byte) {}); !errors.Is(err, listening) {
		t.Errorf("listen: %v", err)
	}
}
