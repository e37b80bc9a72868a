package store

import "testing"

func TestAutomaticSkipReason(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name       string
		kind       string
		privacy    *bool
		hasAutoKey bool
		want       string
	}{
		{"a recorded call with a key", "call", &off, true, ""},
		{"a call on no number", "call", nil, true, ""},
		{"a voicemail", "voicemail", &off, true, SkipNotCallRecording},
		{"a voicemail in privacy mode, without a key", "voicemail", &on, false, SkipNotCallRecording},
		{"privacy mode", "call", &on, true, SkipPrivacyMode},
		{"privacy mode without a key", "call", &on, false, SkipPrivacyMode},
		{"no auto-transcribe key left", "call", &off, false, SkipNoAutoTranscribeKey},
	} {
		if got := automaticSkipReason(tc.kind, tc.privacy, tc.hasAutoKey); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
