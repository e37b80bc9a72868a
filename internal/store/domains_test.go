package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// domains lists the store's domain interfaces (domains.go).
var domains = []reflect.Type{
	reflect.TypeFor[store.Accounts](), reflect.TypeFor[store.Users](), reflect.TypeFor[store.Keys](),
	reflect.TypeFor[store.SignIn](), reflect.TypeFor[store.RateLimits](), reflect.TypeFor[store.Idempotency](),
	reflect.TypeFor[store.Calls](), reflect.TypeFor[store.BulkCalls](), reflect.TypeFor[store.Recordings](),
	reflect.TypeFor[store.Contacts](), reflect.TypeFor[store.Inbox](), reflect.TypeFor[store.Messages](),
	reflect.TypeFor[store.Billing](), reflect.TypeFor[store.Numbers](), reflect.TypeFor[store.Transcriptions](),
	reflect.TypeFor[store.Outbox](), reflect.TypeFor[store.Deferred](), reflect.TypeFor[store.DeliveryHistory](),
	reflect.TypeFor[store.WebhookEndpoints](), reflect.TypeFor[store.DeliveryMembers](),
	reflect.TypeFor[store.Realtime](), reflect.TypeFor[store.Retention](), reflect.TypeFor[store.Transactions](),
	reflect.TypeFor[store.Health](),
}

// Every method of *Store but Close (the wiring's) and the test-only ones belongs to exactly
// one domain, so a consumer can always take an interface instead of *Store.
func TestEveryMethodHasOneDomain(t *testing.T) {
	skip := testOnlyMethods(t)
	skip["Close"] = true
	owner := map[string][]string{}
	for _, d := range domains {
		for m := range d.Methods() {
			owner[m.Name] = append(owner[m.Name], d.Name())
		}
	}
	for m := range reflect.TypeFor[*store.Store]().Methods() {
		if skip[m.Name] {
			continue
		}
		switch in := owner[m.Name]; len(in) {
		case 0:
			t.Errorf("(*Store).%s is in no domain interface: add it to one in domains.go", m.Name)
		case 1:
		default:
			slices.Sort(in)
			t.Errorf("(*Store).%s is in %d domain interfaces %v: keep it in one", m.Name, len(in), in)
		}
	}
}

// testOnlyMethods names the methods export_test.go adds to Store for the tests.
func testOnlyMethods(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("export*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Store" {
					names[fn.Name.Name] = true
				}
			}
		}
	}
	return names
}
