package store_test

import (
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
)

// Only the store talks SQL: no package but these imports pgx in its non-test code. The
// PostgreSQL starter (pgcluster) creates databases for tests and `make run`; storetest hands
// tests a pool of their own for rows they set up or inspect directly.
var pgxImportersAllowed = []string{
	"github.com/switchboard-dev/switchboard/internal/pgcluster",
	"github.com/switchboard-dev/switchboard/internal/store",
	"github.com/switchboard-dev/switchboard/internal/storetest",
}

func TestOnlyTheStoreImportsPgx(t *testing.T) {
	out, err := osexec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}",
		"github.com/switchboard-dev/switchboard/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var importers []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if slices.ContainsFunc(fields[1:], func(p string) bool { return strings.HasPrefix(p, "github.com/jackc/pgx") }) {
			importers = append(importers, fields[0])
		}
	}
	if !slices.Contains(importers, "github.com/switchboard-dev/switchboard/internal/store") {
		t.Fatalf("the listing shows no import of pgx by the store itself: %v", importers)
	}
	for _, p := range importers {
		if !slices.Contains(pgxImportersAllowed, p) {
			t.Errorf("%s imports pgx: only the store talks to PostgreSQL (add a store method instead)", p)
		}
	}
}
