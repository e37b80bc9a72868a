/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package peers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestVerifySignature(t *testing.T) {
	ep := &Endpoint{Secret: "s3cret"}
	body := []byte(`{"id":"evt"}`)
	sign := func(secret, ts string, body []byte) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + ","))
		mac.Write(body)
		return hex.EncodeToString(mac.Sum(nil))
	}
	for _, c := range []struct {
		name   string
		header string
		ok     bool
	}{
		{"signed with the endpoint's secret", "t=1700000000,v1=" + sign("s3cret", "1700000000", body), true},
		{"another secret", "t=1700000000,v1=" + sign("other", "1700000000", body), false},
		{"another timestamp", "t=1700000001,v1=" + sign("s3cret", "1700000000", body), false},
		{"no timestamp", "v1=" + sign("s3cret", "", body), false},
		{"empty", "", false},
	} {
		if err := ep.VerifySignature(c.header, body); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
