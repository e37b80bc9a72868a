package apiserver

import "github.com/switchboard-dev/switchboard/internal/store"

// CheckContactWrite checks a contact write payload (JSON) as PUT /v1/contacts/{contact}
// does, for the portal's contact form: what to store, or the API's 422 messages by field
// (phones' fields as "phones.<index>.<field>").
func CheckContactWrite(raw []byte) (store.ContactInput, map[string][]string) {
	fe := fieldErrors{}
	in := parseContact(raw, "", defaultContactSource, fe)
	return in, fe
}
