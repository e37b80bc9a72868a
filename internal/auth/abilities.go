// Package auth holds API key tokens and the permission model of the v1 API.
package auth

import (
	"fmt"
	"slices"
)

// Ability is a permission string held by an API key.
type Ability string

// The permissions of the v1 API (spec: Authentication).
const (
	Read           Ability = "read"
	ContactsRead   Ability = "contacts:read"
	ContactsWrite  Ability = "contacts:write"
	InboxWrite     Ability = "inbox:write"
	Transcribe     Ability = "transcribe"
	AutoTranscribe Ability = "auto-transcribe"
	WebhooksManage Ability = "webhooks:manage"
)

// AllAbilities lists every permission in the order /me reports them.
var AllAbilities = []Ability{Read, ContactsRead, ContactsWrite, InboxWrite, Transcribe, AutoTranscribe, WebhooksManage}

// implied maps a permission to the ones it includes.
var implied = map[Ability][]Ability{
	ContactsWrite:  {ContactsRead},
	AutoTranscribe: {Transcribe},
}

// Abilities is the set of permissions a key holds.
type Abilities []Ability

// ParseAbilities validates permission names; every key holds read.
func ParseAbilities(names []string) (Abilities, error) {
	out := Abilities{Read}
	for _, n := range names {
		a := Ability(n)
		if !slices.Contains(AllAbilities, a) {
			return nil, fmt.Errorf("unknown permission %q", n)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Has reports whether the set grants a, directly or through a permission that includes it.
func (as Abilities) Has(a Ability) bool {
	for _, held := range as {
		if held == a || slices.Contains(implied[held], a) {
			return true
		}
	}
	return false
}

// Effective expands implied permissions, in AllAbilities order.
func (as Abilities) Effective() []string {
	out := []string{}
	for _, a := range AllAbilities {
		if as.Has(a) {
			out = append(out, string(a))
		}
	}
	return out
}

// Strings returns the permissions as stored.
func (as Abilities) Strings() []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}
