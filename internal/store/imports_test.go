package store_test

import (
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
)

// Only the store talks SQL: no package but these imports pgx in its non-test code. The
// PostgreSQL starter (pgcluster) creates databases for tests and `make run`; storetest hands
// tests a pool of their own (storetest.SQL) for rows they set up or inspect directly, and only
// tests and the packages under test/ may import storetest.
var pgxImportersAllowed = []string{
	"github.com/switchboard-dev/switchboard/test/support/pgcluster",
	"github.com/switchboard-dev/switchboard/internal/store",
	"github.com/switchboard-dev/switchboard/test/support/storetest",
}

func TestOnlyTheStoreImportsPgx(t *testing.T) {
	out, err := osexec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}",
		"github.com/switchboard-dev/switchboard/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pgxImporters, storetestImporters []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if slices.ContainsFunc(fields[1:], func(p string) bool { return strings.HasPrefix(p, "github.com/jackc/pgx") }) {
			pgxImporters = append(pgxImporters, fields[0])
		}
		if slices.Contains(fields[1:], "github.com/switchboard-dev/switchboard/test/support/storetest") {
			storetestImporters = append(storetestImporters, fields[0])
		}
	}
	if !slices.Contains(pgxImporters, "github.com/switchboard-dev/switchboard/internal/store") {
		t.Fatalf("the listing shows no import of pgx by the store itself: %v", pgxImporters)
	}
	for _, p := range pgxImporters {
		if !slices.Contains(pgxImportersAllowed, p) {
			t.Errorf("%s imports pgx: only the store talks to PostgreSQL (add a store method instead)", p)
		}
	}
	if !slices.Contains(storetestImporters, "github.com/switchboard-dev/switchboard/test/support/testenv") {
		t.Fatalf("the listing shows no import of storetest by testenv: %v", storetestImporters)
	}
	for _, p := range storetestImporters {
		if !strings.HasPrefix(p, "github.com/switchboard-dev/switchboard/test/") {
			t.Errorf("%s imports storetest: service code reaches PostgreSQL only through store methods", p)
		}
	}
}
