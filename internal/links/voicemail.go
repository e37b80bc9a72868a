// Package links signs and checks the links the service hands out: recording audio links, and
// the voicemail pages that voicemail.received events point at
// (links.shared_page): anyone holding such a link can hear the voicemail and read its
// transcript, so it carries an HMAC and an expiry and is treated as a secret.
package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"time"
)

// VoicemailPagePath is where the pages are served, followed by the recording's public id.
const VoicemailPagePath = "/v1/shared/voicemails/"

// Errors of CheckVoicemailPage.
var (
	ErrInvalid = errors.New("the link is incomplete or has been altered")
	ErrExpired = errors.New("the link has expired")
)

// VoicemailPage is the address of the page for a recording, issued at issued and working until
// expires (the number's shared-link lifetime after the voicemail arrived).
func VoicemailPage(baseURL string, key []byte, recordingPublicID string, issued, expires time.Time) string {
	iat, exp := strconv.FormatInt(issued.Unix(), 10), strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"issued": {iat}, "expires": {exp}, "sig": {sign(key, recordingPublicID, iat, exp)}}
	return baseURL + VoicemailPagePath + url.PathEscape(recordingPublicID) + "?" + q.Encode()
}

// CheckVoicemailPage verifies a page link's fields at now and returns when it was issued (so
// pages the owner closed afterwards can be refused). The signature is checked first, so an
// altered expiry reads as altered.
func CheckVoicemailPage(key []byte, recordingPublicID, issued, expires, sig string, now time.Time) (time.Time, error) {
	iat, err1 := strconv.ParseInt(issued, 10, 64)
	exp, err2 := strconv.ParseInt(expires, 10, 64)
	got, err3 := hex.DecodeString(sig)
	if len(key) == 0 || recordingPublicID == "" || err1 != nil || err2 != nil || err3 != nil ||
		strconv.FormatInt(iat, 10) != issued || strconv.FormatInt(exp, 10) != expires {
		return time.Time{}, ErrInvalid
	}
	want, _ := hex.DecodeString(sign(key, recordingPublicID, issued, expires))
	if !hmac.Equal(got, want) {
		return time.Time{}, ErrInvalid
	}
	if now.Unix() >= exp {
		return time.Time{}, ErrExpired
	}
	return time.Unix(iat, 0).UTC(), nil
}

// sign binds the purpose in, so no other signed value (such as a recording link) can pass for
// a page signature.
func sign(key []byte, recordingPublicID, issued, expires string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("switchboard voicemail page v1\x00" + recordingPublicID + "\x00" + issued + "\x00" + expires))
	return hex.EncodeToString(m.Sum(nil))
}
