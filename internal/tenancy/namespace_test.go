package tenancy

import "testing"

func TestNamespaceRoundTrip(t *testing.T) {
	for _, id := range []string{"acct_0a1bc2d3e4f5g6h7", "acct_z"} {
		ns := Namespace(id)
		got, ok := AccountOf(ns)
		if !ok || got != id {
			t.Errorf("AccountOf(Namespace(%q)) = %q, %v", id, got, ok)
		}
	}
	for _, ns := range []string{"default", "sb-", "sb-acct", "kube-system"} {
		if _, ok := AccountOf(ns); ok {
			t.Errorf("AccountOf(%q) claims an account", ns)
		}
	}
}
