package speechsynth

import (
	"context"
	"math"
	"testing"
)

func TestSpeakFormats(t *testing.T) {
	if !Available() {
		t.Skip("espeak-ng or sox is not installed (hack/install-speech-tools.sh)")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		f          Format
		rate       uint32
		formatCode uint16
	}{{Wideband, 16000, 1}, {Telephone, 8000, 7}, {TelephoneALaw, 8000, 6}} {
		wav, err := Speak(ctx, "Please call me back this afternoon.", Voice{Name: "en-gb", WordsPerMinute: 150}, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := uint16(wav[20]) | uint16(wav[21])<<8; got != tc.formatCode {
			t.Errorf("format %d: WAV format code %d, want %d", tc.f, got, tc.formatCode)
		}
		if got := uint32(wav[24]) | uint32(wav[25])<<8 | uint32(wav[26])<<16 | uint32(wav[27])<<24; got != tc.rate {
			t.Errorf("format %d: %d Hz, want %d", tc.f, got, tc.rate)
		}
		secs, err := Seconds(wav)
		if err != nil || secs < 1 || secs > 5 {
			t.Errorf("format %d: %.2f s (%v)", tc.f, secs, err)
		}
		again, err := Speak(ctx, "Please call me back this afternoon.", Voice{Name: "en-gb", WordsPerMinute: 150}, tc.f)
		if err != nil || string(again) != string(wav) {
			t.Errorf("format %d: not repeatable", tc.f)
		}
	}
	slow, _ := Speak(ctx, "Please call me back this afternoon.", Voice{WordsPerMinute: 100}, Telephone)
	fast, _ := Speak(ctx, "Please call me back this afternoon.", Voice{WordsPerMinute: 200}, Telephone)
	s, _ := Seconds(slow)
	f, _ := Seconds(fast)
	if math.Abs(s/f-2) > 0.6 {
		t.Errorf("rate not applied: %.2f s at 100 wpm, %.2f s at 200 wpm", s, f)
	}
	if _, err := Seconds([]byte("not a wav")); err == nil {
		t.Error("Seconds accepted garbage")
	}
}
