package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// TokenPrefix starts every API key so that leaked keys are easy to recognise.
const TokenPrefix = "sbk_"

// NewToken returns a fresh API key (256 random bits) and the SHA-256 digest that is stored.
// A plain digest is enough: keys are random, not passwords, so there is nothing to brute-force.
func NewToken() (token string, digest []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, Digest(token)
}

// Digest is the stored form of a key.
func Digest(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// DisplayPrefix is the part of a key shown in lists.
func DisplayPrefix(token string) string {
	if len(token) < len(TokenPrefix)+6 {
		return token
	}
	return token[:len(TokenPrefix)+6]
}

// BearerToken extracts the key from an Authorization header.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
