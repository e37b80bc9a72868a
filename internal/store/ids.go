package store

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Public id prefixes say what a record is; the rest is random. Ids are opaque to clients.
const (
	PrefixAccount         = "acct"
	PrefixUser            = "usr"
	PrefixAPIKey          = "key"
	PrefixBusinessProfile = "bp"
	PrefixNumber          = "num"
	PrefixCall            = "call"
	PrefixRecording       = "rec"
	PrefixConversation    = "conv"
	PrefixMessage         = "msg"
	PrefixContact         = "ct"
	PrefixTask            = "task"
	PrefixSlip            = "slip"
	PrefixJobRequest      = "job"
	PrefixBlockedCaller   = "blk"
	PrefixCharge          = "chg"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewPublicID returns prefix + "_" + 16 random lower-case characters (80 bits).
func NewPublicID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return prefix + "_" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}
