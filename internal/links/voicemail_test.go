package links

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestVoicemailPageLinks(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	issued := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	expires := issued.Add(168 * time.Hour)
	link := VoicemailPage("https://api.example.test", key, "rec_abc", issued, expires)
	u, err := url.Parse(link)
	if err != nil || u.Path != "/v1/shared/voicemails/rec_abc" {
		t.Fatalf("link %q", link)
	}
	q := u.Query()
	check := func(rec, iat, exp, sig string, now time.Time) error {
		_, err := CheckVoicemailPage(key, rec, iat, exp, sig, now)
		return err
	}
	flipped := []byte(q.Get("sig"))
	flipped[0] ^= 1
	cases := []struct {
		name string
		err  error
		got  error
	}{
		{"valid", nil, check("rec_abc", q.Get("issued"), q.Get("expires"), q.Get("sig"), issued.Add(time.Hour))},
		{"expired", ErrExpired, check("rec_abc", q.Get("issued"), q.Get("expires"), q.Get("sig"), expires)},
		{"other recording", ErrInvalid, check("rec_abd", q.Get("issued"), q.Get("expires"), q.Get("sig"), issued)},
		{"longer expiry", ErrInvalid, check("rec_abc", q.Get("issued"), q.Get("expires")+"0", q.Get("sig"), issued)},
		{"earlier issue", ErrInvalid, check("rec_abc", "1", q.Get("expires"), q.Get("sig"), issued)},
		{"altered signature", ErrInvalid, check("rec_abc", q.Get("issued"), q.Get("expires"), string(flipped), issued)},
		{"leading zero", ErrInvalid, check("rec_abc", "0"+q.Get("issued"), q.Get("expires"), q.Get("sig"), issued)},
		{"no signature", ErrInvalid, check("rec_abc", q.Get("issued"), q.Get("expires"), "", issued)},
	}
	for _, c := range cases {
		if !errors.Is(c.got, c.err) { // errors.Is(nil, nil) holds
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.err)
		}
	}
	if _, err := CheckVoicemailPage([]byte("another key, also 32 bytes long!"), "rec_abc", q.Get("issued"), q.Get("expires"), q.Get("sig"), issued); !errors.Is(err, ErrInvalid) {
		t.Errorf("another server's key: %v", err)
	}
	if got, _ := CheckVoicemailPage(key, "rec_abc", q.Get("issued"), q.Get("expires"), q.Get("sig"), issued); !got.Equal(issued) {
		t.Errorf("issued = %v", got)
	}
	if strings.Contains(link, string(key)) {
		t.Error("the key leaks into the link")
	}
}
