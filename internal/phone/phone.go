// Package phone reads phone numbers as people and other systems write them and turns
// them into E.164 ("+447700900123"), the form every e164 column of the data model holds.
package phone

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
	"k8s.io/utils/lru"
)

// DefaultRegion is the region assumed for numbers written without a country code
// ("020 7946 0000", "07700 900123"): the service's customers are in the United Kingdom.
const DefaultRegion = "GB"

// maxInput bounds what is handed to the parser; longer text is not a phone number.
const maxInput = 64

// ToE164 reads raw as a phone number, national forms being taken as UK numbers.
// ok is false when raw cannot be read as a phone number.
func ToE164(raw string) (e164 string, ok bool) {
	return ToE164In(raw, DefaultRegion)
}

// ToE164In reads raw as a phone number, national forms being taken as numbers of region
// (an ISO 3166-1 alpha-2 code such as "GB"). ok is false when raw cannot be read as a
// phone number: empty or over-long text, text without a number in it, or a number whose
// length is impossible for its country. The number need not be in service: lengths are
// checked, number ranges are not, so numbers in newly opened ranges are still kept.
func ToE164In(raw, region string) (e164 string, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxInput {
		return "", false
	}
	key := parseKey{raw: raw, region: region}
	if v, ok := parsed.Get(key); ok {
		r := v.(parseResult)
		return r.e164, r.ok
	}
	e164, ok = parse(raw, region)
	parsed.Add(key, parseResult{e164: e164, ok: ok})
	return e164, ok
}

// parsed remembers ToE164In's recent answers, which depend on nothing but the input.
// libphonenumber's parse (regular expressions) was a seventh of serve's CPU while the
// platform reported calls, and their numbers repeat: the account's own numbers, regular
// callers. Bounded: the least recently used answers are dropped.
var parsed = lru.New(parsedSize)

const parsedSize = 8192

type (
	parseKey    struct{ raw, region string }
	parseResult struct {
		e164 string
		ok   bool
	}
)

func parse(raw, region string) (string, bool) {
	num, err := phonenumbers.Parse(raw, region)
	if err != nil {
		return "", false
	}
	if phonenumbers.IsPossibleNumberWithReason(num) != phonenumbers.IS_POSSIBLE {
		return "", false
	}
	return phonenumbers.Format(num, phonenumbers.E164), true
}
