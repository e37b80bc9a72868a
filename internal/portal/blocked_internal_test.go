package portal

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/store"
)

func TestReadBlockForm(t *testing.T) {
	numbers := []store.NumberRow{{PublicID: "num_office", E164: "+442079460000"}}
	for _, c := range []struct {
		name   string
		form   url.Values
		want   block
		errors map[string]string
	}{
		{"a national number on every number", url.Values{"number": {" 07700 900123 "}, "action": {"reject"}},
			block{E164: "+447700900123", Action: "reject"}, map[string]string{}},
		{"an international number on one number, with a label", url.Values{"number": {"+44 20 7946 0999"}, "action": {"voicemail"}, "on": {"num_office"}, "label": {" Cold caller "}},
			block{E164: "+442079460999", Action: "voicemail", On: "num_office", Label: "Cold caller"}, map[string]string{}},
		{"nothing", url.Values{}, block{}, map[string]string{"number": "The number field is required.", "action": "The action must be one of: reject, voicemail."}},
		{"not a number, another account's number, a long label", url.Values{"number": {"call me"}, "action": {"reject"}, "on": {"num_theirs"}, "label": {strings.Repeat("x", 201)}},
			block{}, map[string]string{"number": "The number must be a phone number.",
				"on": "The number to block it on must be one of the account's numbers.", "label": "The label may not be longer than 200 characters."}},
	} {
		f, b, ok := readBlockForm(c.form, numbers)
		if ok != (len(c.errors) == 0) || !reflect.DeepEqual(f.Errors, c.errors) {
			t.Errorf("%s: ok %v, errors %v; want %v", c.name, ok, f.Errors, c.errors)
		}
		if ok && b != c.want {
			t.Errorf("%s: read %+v, want %+v", c.name, b, c.want)
		}
	}
}
