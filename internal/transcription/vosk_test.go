package transcription

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/speechsynth"
)

func TestParseVosk(t *testing.T) {
	got, err := parseVosk([]byte(`{"words": [{"start": 0.03, "end": 0.4, "word": "my"}, {"start": 0.4, "end": 0.9, "word": "boiler"},
		{"start": 0.9, "end": 1.5, "word": "broke"}, {"start": 1.6, "end": 1.7, "word": " "},
		{"start": 2.5, "end": 3, "word": "call"}, {"start": 3.05, "end": 3.5, "word": "me"}, {"start": 3.5, "end": 4.25, "word": "back"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Speech{Text: "my boiler broke call me back", Language: "en", Segments: []Segment{
		{Start: 0.03, End: 1.5, Speaker: "speaker", Text: "my boiler broke"},
		{Start: 2.5, End: 4.25, Speaker: "speaker", Text: "call me back"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got, err := parseVosk([]byte(`{"words": []}`)); err != nil || got.Text != "" || len(got.Segments) != 0 {
		t.Errorf("no words: %+v %v", got, err)
	}
	if _, err := parseVosk([]byte("Traceback")); err == nil {
		t.Error("non-JSON output parsed")
	}
}

// installedVosk runs hack/install-vosk.sh (a no-op once it has run) and returns the engine it
// installed; the test is skipped only when the script cannot run here.
func installedVosk(t *testing.T) Vosk {
	t.Helper()
	if !speechsynth.Available() {
		t.Skip("espeak-ng or sox is not installed (hack/install-speech-tools.sh)")
	}
	out, err := exec.Command("../../hack/install-vosk.sh").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Skipf("hack/install-vosk.sh cannot install Vosk here: %v: %s", err, stderr)
	}
	var v Vosk
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "VOSK_PYTHON="); ok {
			v.Python = p
		}
		if m, ok := strings.CutPrefix(sc.Text(), "VOSK_MODEL="); ok {
			v.ModelDir = m
		}
	}
	if !v.Available() {
		t.Fatalf("hack/install-vosk.sh succeeded but the engine is not available: %+v", v)
	}
	return v
}

// TestVoskOnTelephoneSpeech runs the real engine on a caller's sentence spoken by espeak-ng
// and band-limited to telephone audio (8 kHz mu-law), and checks it hears the key words.
func TestVoskOnTelephoneSpeech(t *testing.T) {
	v := installedVosk(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	audio, err := speechsynth.Speak(ctx, "Hello, the boiler has stopped working and we have no hot water. Please call me back this morning.",
		speechsynth.Voice{Name: "en-gb", WordsPerMinute: 150}, speechsynth.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Transcribe(ctx, Audio{Data: bytes.NewReader(audio), Filename: "call.wav"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heard %q", got.Text)
	// espeak-ng's voice through a telephone band is hard even for Vosk (it hears "boiler" as
	// "oil"), so half of the key words must be heard, not all.
	heard := " " + got.Text + " "
	keys := []string{"boiler", "stopped", "working", "hot", "water", "call", "back", "morning"}
	var missed []string
	for _, w := range keys {
		if !strings.Contains(heard, " "+w+" ") {
			missed = append(missed, w)
		}
	}
	if len(missed) > len(keys)/2 {
		t.Errorf("missed %q of %q in %q", missed, keys, got.Text)
	}
	if got.Language != "en" || len(got.Segments) == 0 {
		t.Fatalf("speech %+v", got)
	}
	// Two sentences, about 6.5 s: split at the pause between them, not one block.
	if len(got.Segments) < 2 {
		t.Errorf("segments %+v: want the two sentences apart", got.Segments)
	}
	seconds, err := speechsynth.Seconds(audio)
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range got.Segments {
		if sg.End <= sg.Start || sg.Start < 0 || sg.End > seconds+0.5 || sg.Speaker != "speaker" {
			t.Errorf("segment %+v (audio %.1f s)", sg, seconds)
		}
	}

	// Bytes that are not audio: permanent.
	if _, err := v.Transcribe(ctx, Audio{Data: strings.NewReader("not audio at all"), Filename: "x.wav"}); !IsPermanent(err) {
		t.Errorf("garbage audio: %v", err)
	}
}

// TestVoskTwoChannels runs the configured vosk engine on a two-channel call (the caller on
// the left, the agent on the right) and checks each side's words land with its speaker.
func TestVoskTwoChannels(t *testing.T) {
	v := installedVosk(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stt, _, err := NewEngines(EngineConfig{Speech: SpeechVosk})
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := stt.(ChannelSpeakers)
	if !ok {
		t.Fatalf("vosk engine is %T, want ChannelSpeakers", stt)
	}
	cs.Engine = v // the paths the script printed (the same as the defaults unless $SWITCHBOARD_CACHE moved)
	dir := t.TempDir()
	caller := speak(t, dir, "caller.wav", "My boiler is broken and there is no hot water.", speechsynth.Telephone)
	agent := speak(t, dir, "agent.wav", "Thank you, an engineer will call you this afternoon.", speechsynth.Telephone)
	// The caller, then silence; silence, then the agent from 5 s.
	sox(t, caller, filepath.Join(dir, "c.wav"), "pad", "0", "6")
	sox(t, agent, filepath.Join(dir, "a.wav"), "pad", "5", "0")
	path := filepath.Join(dir, "call.wav")
	sox(t, "-M", filepath.Join(dir, "c.wav"), filepath.Join(dir, "a.wav"), "-e", "mu-law", path)
	stereo, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.Transcribe(ctx, Audio{Data: bytes.NewReader(stereo), Filename: "call.wav"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heard %+v", got.Segments)
	said := map[string]string{}
	for _, sg := range got.Segments {
		said[sg.Speaker] += " " + sg.Text + " "
		if sg.Speaker == SpeakerAgent && sg.Start < 4.5 {
			t.Errorf("agent segment %+v starts before the agent spoke (5 s)", sg)
		}
	}
	for speaker, words := range map[string][]string{SpeakerCaller: {"hot", "water"}, SpeakerAgent: {"call", "afternoon"}} {
		for _, w := range words {
			if !strings.Contains(said[speaker], " "+w+" ") {
				t.Errorf("%s: %q not heard in %q", speaker, w, said[speaker])
			}
		}
	}
}
