package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// NewSecret makes a signing secret: whsec_ and 32 random bytes in hex.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return SecretPrefix + hex.EncodeToString(b)
}

// Sign is the spec's signature: lower-case hex HMAC-SHA256, keyed with the secret (the whole
// whsec_ text), of the Unix-seconds timestamp text, a dot and the raw body.
func Sign(secret string, unixSeconds int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(unixSeconds, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
