package speechsynth

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"slices"
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

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		lengths     []int
		pause, rate int
		starts      []int
		total       int
	}{
		{[]int{10}, 2, 10, []int{2}, 20},           // 12 samples: two whole seconds
		{[]int{8}, 2, 10, []int{2}, 10},            // exactly one second
		{[]int{5, 3}, 1, 10, []int{1, 7}, 10},      // pause before each turn
		{[]int{5, 3, 9}, 0, 4, []int{0, 5, 8}, 20}, // no pause: back to back, 17 → 20
	} {
		starts, total := layout(tc.lengths, tc.pause, tc.rate)
		if !slices.Equal(starts, tc.starts) || total != tc.total {
			t.Errorf("layout(%v, %d, %d) = %v, %d; want %v, %d", tc.lengths, tc.pause, tc.rate, starts, total, tc.starts, tc.total)
		}
	}
}

func TestFestival(t *testing.T) {
	if !FestivalAvailable(FestivalHTSFemale) {
		t.Skip("festival or festvox-us-slt-hts is not installed (hack/install-speech-tools.sh)")
	}
	if FestivalAvailable("no_such_voice") || FestivalAvailable("(system \"x\")") {
		t.Error("a voice that is not installed is available")
	}
	ctx := context.Background()
	v := Voice{Festival: FestivalHTSFemale, Name: "en-gb"}
	hts, err := Speak(ctx, "Please call me back this afternoon.", v, Telephone)
	if err != nil {
		t.Fatal(err)
	}
	espeak, err := Speak(ctx, "Please call me back this afternoon.", Voice{Name: "en-gb"}, Telephone)
	if err != nil {
		t.Fatal(err)
	}
	if string(hts) == string(espeak) {
		t.Error("the Festival voice spoke as espeak-ng does")
	}
	if secs, err := Seconds(hts); err != nil || secs < 1 || secs > 5 {
		t.Errorf("Festival: %.2f s (%v)", secs, err)
	}
}

func TestConversation(t *testing.T) {
	if !Available() {
		t.Skip("espeak-ng or sox is not installed (hack/install-speech-tools.sh)")
	}
	ctx := context.Background()
	agent := Voice{Festival: FestivalDiphoneMale, Name: "en-us"}
	caller := Voice{Festival: FestivalHTSFemale, Name: "en-gb"}
	wav, spans, err := Conversation(ctx, []Turn{{Agent: true, Voice: agent, Text: "Acme Plumbing, how can I help?"},
		{Voice: caller, Text: "My boiler is broken."}}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if ch, format := uint16(wav[22]), uint16(wav[20]); ch != 2 || format != 7 {
		t.Errorf("%d channels, format %d; want 2, mu-law (7)", ch, format)
	}
	secs, err := Seconds(wav)
	if err != nil || secs != math.Trunc(secs) || secs < spans[1].End {
		t.Errorf("%.3f s (%v): want whole seconds after the last turn (%.2f s)", secs, err, spans[1].End)
	}
	if spans[0].Start != 0.5 || spans[1].Start != spans[0].End+0.5 || spans[1].End <= spans[1].Start {
		t.Errorf("spans %+v", spans)
	}
	// Each side is heard on its own channel only: the caller's channel is silent while the
	// agent speaks, the agent's while the caller does.
	pcm := decode(t, wav)
	loud := func(ch int, s Span) int {
		n := 0
		for i := int(s.Start * 8000); i < int(s.End*8000); i++ {
			if v := pcm[2*i+ch]; v > 500 || v < -500 {
				n++
			}
		}
		return n
	}
	if loud(1, spans[0]) == 0 || loud(0, spans[0]) != 0 || loud(0, spans[1]) == 0 || loud(1, spans[1]) != 0 {
		t.Errorf("channels: agent turn %d/%d, caller turn %d/%d loud samples (caller/agent channel)",
			loud(0, spans[0]), loud(1, spans[0]), loud(0, spans[1]), loud(1, spans[1]))
	}

	mono, _, err := Conversation(ctx, []Turn{{Voice: caller, Text: "It's Sam, call me back."}}, 0.3)
	if err != nil || uint16(mono[22]) != 1 {
		t.Errorf("a caller alone: %v, %d channels; want 1", err, mono[22])
	}
}

// decode reads a mu-law WAV back to 16-bit samples with sox.
func decode(t *testing.T, wav []byte) []int16 {
	t.Helper()
	cmd := exec.Command("sox", "-q", "-t", "wav", "-", "-t", "wav", "-b", "16", "-e", "signed-integer", "-")
	cmd.Stdin = bytes.NewReader(wav)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	s, err := pcmSamples(fixSizes(out))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
