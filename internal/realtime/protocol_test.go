package realtime

import (
	"testing"
	"time"
)

func TestSignerMatchesPusherReferenceVector(t *testing.T) {
	// The example of Pusher's "Generating the authentication string" documentation.
	s := Signer{Key: "278d425bdf160c739803", Secret: []byte("7ad3773142a6692b25b8")}
	want := "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"
	if got := s.Sign("1234.1234", "private-foobar"); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		auth string
		ok   bool
	}{
		{want, true},
		{"other:" + want[len("278d425bdf160c739803:"):], false},
		{want[:len(want)-1] + "5", false},
		{"278d425bdf160c739803:zz", false},
		{"no colon", false},
		{"", false},
	} {
		if got := s.Verify("1234.1234", "private-foobar", tc.auth); got != tc.ok {
			t.Errorf("Verify(%q) = %v", tc.auth, got)
		}
	}
	if s.Verify("1234.1235", "private-foobar", want) {
		t.Error("a signature verified for another socket")
	}
}

func TestDecideIdle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const activity, pong = 120 * time.Second, 30 * time.Second
	for _, tc := range []struct {
		name                string
		lastHeard, pingSent time.Time
		now                 time.Time
		want                idleAction
	}{
		{"recently heard", t0, time.Time{}, t0.Add(119 * time.Second), idleNone},
		{"silent for the activity timeout", t0, time.Time{}, t0.Add(120 * time.Second), idlePing},
		{"pinged, waiting", t0, t0.Add(120 * time.Second), t0.Add(149 * time.Second), idleNone},
		{"pinged, no answer", t0, t0.Add(120 * time.Second), t0.Add(150 * time.Second), idleClose},
		{"heard after the ping", t0.Add(125 * time.Second), t0.Add(120 * time.Second), t0.Add(200 * time.Second), idleNone},
		{"heard after the ping, silent again", t0.Add(125 * time.Second), t0.Add(120 * time.Second), t0.Add(245 * time.Second), idlePing},
	} {
		if got := decideIdle(tc.lastHeard, tc.pingSent, tc.now, activity, pong); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckProtocol(t *testing.T) {
	for v, want := range map[string]int{"": CloseNoProtocol, "7": 0, "6": 0, "5": 0, "4": CloseUnsupportedVersion, "8": CloseUnsupportedVersion, "x": CloseUnsupportedVersion} {
		if got, _ := checkProtocol(v); got != want {
			t.Errorf("protocol %q: %d, want %d", v, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	for name, account := range map[string]string{
		"private-account.acct_1": "acct_1", "private-account.": "", "private-account.a.b": "", "presence-account.acct_1": "",
		"account.acct_1": "",
	} {
		if got := ChannelAccount(name); got != account {
			t.Errorf("ChannelAccount(%q) = %q", name, got)
		}
	}
	for id, ok := range map[string]bool{"1.2": true, "123456.7890": true, "1": false, "a.b": false, "1.2.3": false, " 1.2": false} {
		if ValidSocketID(id) != ok {
			t.Errorf("ValidSocketID(%q) != %v", id, ok)
		}
	}
	for i := 0; i < 100; i++ {
		if id := newSocketID(); !ValidSocketID(id) {
			t.Fatalf("newSocketID() = %q", id)
		}
	}
}
