package send

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// secretBytes is the random part of a new secret (Standard Webhooks asks for 24 to 64).
const secretBytes = 32

// NewSecret makes a signing secret in the Standard Webhooks form: whsec_ and the standard
// base64 of 32 random bytes. Secrets made before were whsec_ and 64 hex digits; hex digits
// are base64 text too, so those still give a Standard Webhooks key (StandardKey).
func NewSecret() string {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
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

// StandardKey is the HMAC key Standard Webhooks reads from a secret: the standard base64
// after whsec_. ok is false for a secret that is not base64 (one set by hand), whose
// deliveries then carry no webhook-signature.
func StandardKey(secret string) (key []byte, ok bool) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	return key, err == nil && len(key) > 0
}

// SignStandard is the Standard Webhooks signature (webhook-signature): v1, a comma and the
// base64 HMAC-SHA256, keyed with StandardKey, of the message id, a dot, the Unix-seconds
// timestamp, a dot and the raw body.
func SignStandard(key []byte, id string, unixSeconds int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(unixSeconds, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
