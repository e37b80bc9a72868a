package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestContactSearch(t *testing.T) {
	for _, tc := range []struct{ q, digits string }{
		{"+44 20 7946", "44207946"},
		{"7946-0000", "79460000"},
		{"(020) 7946.0000", "02079460000"},
		{"Unit 4", ""},
		{"Acme", ""},
		{"+-()", ""},
		{"", ""},
	} {
		f := store.ContactSearch(tc.q)
		if f.Search != tc.q || f.PhoneDigits != tc.digits || f.Source != "" {
			t.Errorf("ContactSearch(%q) = %+v, want phone digits %q", tc.q, f, tc.digits)
		}
	}
}
