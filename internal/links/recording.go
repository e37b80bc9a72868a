package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"time"
)

// RecordingPath is where a recording's audio is served by a signed link (the API's
// GET /v1/media/recordings/{recording}), followed by the recording's public id.
const RecordingPath = "/v1/media/recordings/"

// RecordingTTL is how long a recording link works by default (spec: Limits, recording link lifetime).
const RecordingTTL = 10 * time.Minute

// Recording is the signed address of a recording's audio, working until expires. The API's
// stream-url and the portal's audio player both hand out this link.
func Recording(baseURL string, key []byte, recordingPublicID string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"expires": {exp}, "sig": {RecordingSignature(key, recordingPublicID, exp)}}
	return baseURL + RecordingPath + url.PathEscape(recordingPublicID) + "?" + q.Encode()
}

// RecordingSignature is the hex HMAC-SHA256 of the recording id and expiry time (Unix seconds,
// as written in the link). The fields are separated by a byte that neither contains, and the
// purpose is bound in, so no other signed value can be passed off as a link signature.
func RecordingSignature(key []byte, recordingPublicID, expires string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("switchboard recording link v1\x00" + recordingPublicID + "\x00" + expires))
	return hex.EncodeToString(m.Sum(nil))
}
