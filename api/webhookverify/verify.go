// Package webhookverify checks that a webhook request really comes from Switchboard.
//
// Each delivery carries X-Service-Timestamp (Unix seconds) and X-Service-Signature, the
// lower-case hex HMAC-SHA256, keyed with the endpoint's signing secret (whsec_...), of the
// timestamp text, a dot and the raw body. A receiver verifies the signature in constant time
// and refuses timestamps more than five minutes away from its clock, then de-duplicates on
// X-Service-Delivery (the event id, the same on every retry and resend):
//
//	v := webhookverify.Verifier{Secret: os.Getenv("SWITCHBOARD_WEBHOOK_SECRET")}
//	http.HandleFunc("/hooks", func(w http.ResponseWriter, r *http.Request) {
//		body, err := v.Request(r)
//		if err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		// handle body (JSON) once per r.Header.Get("X-Service-Delivery")
//		w.WriteHeader(http.StatusNoContent)
//	})
//
// The package depends only on the standard library.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	HeaderTimestamp = "X-Service-Timestamp"
	HeaderSignature = "X-Service-Signature"
	HeaderDelivery  = "X-Service-Delivery"
	HeaderEvent     = "X-Service-Event"
)

// DefaultTolerance is how far a timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// MaxBodyBytes bounds what Request reads.
const MaxBodyBytes = 1 << 20

// Errors returned by Verify.
var (
	ErrNoSecret     = errors.New("webhookverify: the verifier has no secret (is the signing secret's variable set?)")
	ErrNoSignature  = errors.New("webhookverify: missing X-Service-Timestamp or X-Service-Signature")
	ErrBadTimestamp = errors.New("webhookverify: X-Service-Timestamp is not Unix seconds")
	ErrStale        = errors.New("webhookverify: timestamp outside the tolerance (replayed or clock skew)")
	ErrBadSignature = errors.New("webhookverify: signature does not match")
)

// Verifier checks deliveries to one endpoint.
type Verifier struct {
	// Secret is the endpoint's signing secret, whsec_...
	Secret string
	// Tolerance is the largest accepted age (and clock skew ahead); default five minutes.
	Tolerance time.Duration
	// Now is the receiver's clock; default time.Now.
	Now func() time.Time
}

// Verify checks the signature of body against the headers.
func (v Verifier) Verify(h http.Header, body []byte) error {
	// An HMAC keyed with an empty secret is one anybody can compute, so a receiver whose
	// secret variable is unset must refuse every request rather than accept forgeries.
	if strings.TrimSpace(v.Secret) == "" {
		return ErrNoSecret
	}
	tsText, sig := strings.TrimSpace(h.Get(HeaderTimestamp)), strings.TrimSpace(h.Get(HeaderSignature))
	if tsText == "" || sig == "" {
		return ErrNoSignature
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	age := now().Sub(time.Unix(ts, 0))
	if age > tol || age < -tol {
		return ErrStale
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return ErrBadSignature
	}
	mac := hmac.New(sha256.New, []byte(v.Secret))
	mac.Write([]byte(tsText))
	mac.Write([]byte("."))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// Request reads r's body (at most MaxBodyBytes) and verifies it; it returns the body.
func (v Verifier) Request(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes))
	if err != nil {
		return nil, err
	}
	return body, v.Verify(r.Header, body)
}

// Verify checks a delivery with the default tolerance and the system clock.
func Verify(secret string, h http.Header, body []byte) error {
	return Verifier{Secret: secret}.Verify(h, body)
}
