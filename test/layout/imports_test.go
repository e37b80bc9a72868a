package layout

import (
	"encoding/json"
	"errors"
	"io"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/switchboard-dev/switchboard"

// Tools that start the service's parts for people rather than for tests (`make run`, the
// schema dump behind `make generate`) may use the test support.
var testSupportUsersAllowed = []string{
	module + "/hack/localdev",
	module + "/hack/schemadump",
}

// goPackage is the part of `go list -json` these tests read.
type goPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func goList(t *testing.T, args ...string) []goPackage {
	t.Helper()
	cmd := osexec.Command("go", append([]string{"list", "-json"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var exit *osexec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list %v: %v\n%s", args, err, exit.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %v: decoding: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %v listed no packages", args)
	}
	return pkgs
}

func isTestTree(importPath string) bool {
	return strings.HasPrefix(importPath, module+"/test/")
}

func TestShippedBinaryDependsOnNoTestPackage(t *testing.T) {
	deps := goList(t, module)[0].Deps
	if !slices.Contains(deps, module+"/internal/cli") {
		t.Fatalf("the binary's dependencies lack internal/cli, so the listing is not the binary's: %v", deps)
	}
	for _, d := range deps {
		if isTestTree(d) {
			t.Errorf("the switchboard binary depends on %s: test support must stay out of what ships", d)
		}
	}
}

func TestOnlyTestsAndDevToolsImportTheTestTree(t *testing.T) {
	users := 0
	for _, p := range goList(t, module+"/...") {
		for _, imp := range p.Imports {
			if !isTestTree(imp) {
				continue
			}
			if isTestTree(p.ImportPath) || slices.Contains(testSupportUsersAllowed, p.ImportPath) {
				users++
				continue
			}
			t.Errorf("%s imports %s in its non-test code: only tests, test/ and %v may", p.ImportPath, imp, testSupportUsersAllowed)
		}
	}
	if users == 0 {
		t.Fatal("no package imports anything under test/, so the listing cannot be right (servetest imports controlplane)")
	}
}

// The development outbox's SMTP server is for `make run`: the shipped binary holds no mail server.
func TestShippedBinaryHoldsNoMailServer(t *testing.T) {
	deps := goList(t, module)[0].Deps
	if !slices.Contains(deps, module+"/internal/portal") {
		t.Fatalf("the binary's dependencies lack internal/portal, so the listing is not the binary's")
	}
	for _, d := range deps {
		if d == module+"/internal/devoutbox/smtpd" || strings.HasPrefix(d, "github.com/emersion/go-smtp") {
			t.Errorf("the switchboard binary depends on %s", d)
		}
	}
}
