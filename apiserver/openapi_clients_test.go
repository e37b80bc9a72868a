package apiserver_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedClientsBuild generates clients from GET /v1/openapi.json with ogen, oapi-codegen
// (both with default settings) and openapi-typescript, as an integrator would, and compiles
// each. The generators are pinned: ogen by hack/tools/go.mod, oapi-codegen by go.mod, and
// openapi-typescript and TypeScript by hack/clientcheck/package-lock.json. Only the TypeScript
// part is skipped, and only where Node is absent.
func TestGeneratedClientsBuild(t *testing.T) {
	h := newHarness(t)
	resp := h.api.DoUnchecked(t, "", "GET", "/v1/openapi.json", nil)
	if resp.Status != 200 {
		t.Fatalf("GET /v1/openapi.json: %s", resp)
	}
	spec := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(spec, resp.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(repo, "hack", "tools")

	t.Run("ogen", func(t *testing.T) {
		mod := t.TempDir()
		run(t, tools, "go", "tool", "ogen", "-clean", "-target", filepath.Join(mod, "api"), "-package", "api", spec)
		buildModule(t, mod, "github.com/ogen-go/ogen@"+moduleVersion(t, tools, "github.com/ogen-go/ogen"))
	})
	t.Run("oapi-codegen", func(t *testing.T) {
		mod := t.TempDir()
		if err := os.Mkdir(filepath.Join(mod, "api"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, repo, "go", "tool", "oapi-codegen", "-package", "api", "-o", filepath.Join(mod, "api", "api.gen.go"), spec)
		buildModule(t, mod, "github.com/oapi-codegen/runtime@"+moduleVersion(t, repo, "github.com/oapi-codegen/runtime"))
	})
	t.Run("openapi-typescript", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(repo, "hack", "ensure-openapi-typescript.sh")).Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			t.Skip("Node and npm are not installed: the TypeScript client (openapi-typescript, tsc) is not checked")
		}
		if err != nil {
			t.Fatalf("hack/ensure-openapi-typescript.sh: %v\n%s", err, exitStderr(err))
		}
		bin := strings.TrimSpace(string(out))
		dir := t.TempDir()
		types := filepath.Join(dir, "schema.d.ts")
		run(t, dir, filepath.Join(bin, "openapi-typescript"), spec, "-o", types)
		run(t, dir, filepath.Join(bin, "tsc"), "--noEmit", "--strict", types)
	})
}

// buildModule makes dir a module that requires the generated code's runtime at the pinned
// version, resolves the rest through the module proxy (or the module cache) and builds it.
func buildModule(t *testing.T, dir, runtime string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module clientcheck\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "go", "get", runtime)
	run(t, dir, "go", "mod", "tidy")
	run(t, dir, "go", "build", "./...")
}

func moduleVersion(t *testing.T, dir, module string) string {
	t.Helper()
	return strings.TrimSpace(run(t, dir, "go", "list", "-m", "-f", "{{.Version}}", module))
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// The temporary modules are outside any workspace.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}
