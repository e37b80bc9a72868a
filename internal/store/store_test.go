package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/storetest"
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
