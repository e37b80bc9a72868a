package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Only the wiring (serve, `make run`), the store itself and the test tree name *store.Store;
// every other package takes the store's domain interfaces (internal/store/domains.go), so what
// it touches shows in its types.
var storeNamersAllowed = []string{
	module + "/internal/store",
	module + "/internal/serve",
	module + "/hack/localdev",
}

func TestOnlyTheWiringNamesTheStore(t *testing.T) {
	namers := map[string]bool{}
	for _, p := range goList(t, module+"/...") {
		for _, name := range p.GoFiles {
			if namesStore(t, filepath.Join(p.Dir, name)) {
				namers[p.ImportPath] = true
				if !isTestTree(p.ImportPath) && !slices.Contains(storeNamersAllowed, p.ImportPath) {
					t.Errorf("%s names store.Store: take the store's domain interfaces it uses instead", filepath.Join(p.ImportPath, name))
				}
			}
		}
	}
	if !namers[module+"/internal/serve"] {
		t.Fatal("internal/serve names no store.Store, so the search cannot be right (serve opens the store)")
	}
}

// namesStore reports whether a Go file refers to the type Store of internal/store.
func namesStore(t *testing.T, path string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/internal/store" {
			local = "store"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return false
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				found = true
			}
		}
		return !found
	})
	return found
}
