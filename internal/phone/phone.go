// Package phone reads phone numbers as people and other systems write them and turns
// them into E.164 ("+447700900123"), the form every e164 column of the data model holds.
package phone

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
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
	num, err := phonenumbers.Parse(raw, region)
	if err != nil {
		return "", false
	}
	if phonenumbers.IsPossibleNumberWithReason(num) != phonenumbers.IS_POSSIBLE {
		return "", false
	}
	return phonenumbers.Format(num, phonenumbers.E164), true
}
