// Package must holds the helper tests use to turn a value into JSON, failing the test at
// once when that errs (one copy instead of one per package).
package must

import (
	"encoding/json"
	"testing"
)

// JSON is v marshalled to JSON; the test fails at once when v cannot be marshalled.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
