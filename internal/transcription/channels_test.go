package transcription

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/speechsynth"
)

// needSpeechTools skips without the tools hack/install-speech-tools.sh installs.
func needSpeechTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"espeak-ng", "sox", "pocketsphinx_continuous"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (hack/install-speech-tools.sh)", tool)
		}
	}
}

func sox(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("sox", append([]string{"-q", "-D"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("sox %v: %v: %s", args, err, out)
	}
}

func speak(t *testing.T, dir, name, text string, f speechsynth.Format) string {
	t.Helper()
	wav, err := speechsynth.Speak(context.Background(), text, speechsynth.Voice{Name: "en-gb", WordsPerMinute: 150}, f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, wav, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChannelSpeakersSplitsTwoChannelCalls: the caller speaks on the first channel, then the
// agent answers on the second after four seconds; each segment carries its channel's speaker
// and starts within its channel's speech.
func TestChannelSpeakersSplitsTwoChannelCalls(t *testing.T) {
	needSpeechTools(t)
	dir := t.TempDir()
	caller := speak(t, dir, "caller.wav", "My boiler is broken.", speechsynth.Telephone)
	agent := speak(t, dir, "agent.wav", "We will send an engineer today.", speechsynth.Telephone)
	callerSecs := soxSeconds(t, caller)
	// Both channels as long as the whole call: the caller then silence, silence then the agent.
	sox(t, caller, filepath.Join(dir, "c.wav"), "pad", "0", "6")
	sox(t, agent, filepath.Join(dir, "a.wav"), "pad", "4", "0")
	stereo := filepath.Join(dir, "call.wav")
	sox(t, "-M", filepath.Join(dir, "c.wav"), filepath.Join(dir, "a.wav"), "-e", "mu-law", stereo)
	data, err := os.ReadFile(stereo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got, err := ChannelSpeakers{Engine: PocketSphinx{}}.Transcribe(ctx, Audio{Data: bytes.NewReader(data), Filename: "call.wav"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, sg := range got.Segments {
		seen[sg.Speaker] = true
		switch sg.Speaker {
		case SpeakerCaller:
			if sg.Start > callerSecs {
				t.Errorf("caller segment %+v starts after the caller stopped (%.1f s)", sg, callerSecs)
			}
		case SpeakerAgent:
			if sg.Start < 3.5 {
				t.Errorf("agent segment %+v starts before the agent spoke (4 s)", sg)
			}
		default:
			t.Errorf("segment %+v: speaker %q", sg, sg.Speaker)
		}
		if i > 0 && sg.Start < got.Segments[i-1].Start {
			t.Errorf("segments out of order: %+v", got.Segments)
		}
	}
	if !seen[SpeakerCaller] || !seen[SpeakerAgent] || got.Text == "" {
		t.Errorf("want both speakers and text: %+v", got)
	}
}

// engineFunc is a speech engine made of a function, to see what ChannelSpeakers hands on.
type engineFunc func(context.Context, Audio) (Speech, error)

func (f engineFunc) Transcribe(ctx context.Context, a Audio) (Speech, error) { return f(ctx, a) }

// A mono recording, or one sox cannot read, goes to the engine untouched, speakers as they are.
func TestChannelSpeakersPassesMonoThrough(t *testing.T) {
	needSpeechTools(t)
	dir := t.TempDir()
	mono, err := os.ReadFile(speak(t, dir, "mono.wav", "Hello.", speechsynth.Telephone))
	if err != nil {
		t.Fatal(err)
	}
	for name, audio := range map[string][]byte{"mono.wav": mono, "garbage.wav": []byte("not audio")} {
		calls := 0
		eng := engineFunc(func(_ context.Context, a Audio) (Speech, error) {
			calls++
			b, _ := io.ReadAll(a.Data)
			if !bytes.Equal(b, audio) || a.Filename != name {
				t.Errorf("%s: the engine got %d bytes named %q", name, len(b), a.Filename)
			}
			return Speech{Text: "hello", Segments: []Segment{{Start: 0, End: 1, Speaker: "speaker", Text: "hello"}}}, nil
		})
		got, err := ChannelSpeakers{Engine: eng}.Transcribe(context.Background(), Audio{Data: bytes.NewReader(audio), Filename: name})
		if err != nil || calls != 1 || got.Segments[0].Speaker != "speaker" {
			t.Errorf("%s: %d calls, %+v, %v", name, calls, got, err)
		}
	}
}

// TestPocketSphinxReadsTelephoneFormats: the formats platforms send all decode.
func TestPocketSphinxReadsTelephoneFormats(t *testing.T) {
	needSpeechTools(t, "opusenc")
	dir := t.TempDir()
	ulaw := speak(t, dir, "ulaw.wav", "My boiler is broken.", speechsynth.Telephone)
	alaw := speak(t, dir, "alaw.wav", "My boiler is broken.", speechsynth.TelephoneALaw)
	mp3 := filepath.Join(dir, "call.mp3")
	sox(t, ulaw, mp3)
	pcm := filepath.Join(dir, "pcm.wav")
	sox(t, ulaw, "-e", "signed-integer", "-b", "16", pcm)
	opus := filepath.Join(dir, "call.opus")
	if out, err := exec.Command("opusenc", "--quiet", pcm, opus).CombinedOutput(); err != nil {
		t.Fatalf("opusenc: %v: %s", err, out)
	}
	for _, path := range []string{ulaw, alaw, mp3, opus} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		got, err := PocketSphinx{}.Transcribe(ctx, Audio{Data: bytes.NewReader(data), Filename: "recording" + filepath.Ext(path)})
		cancel()
		if err != nil || got.Text == "" || len(got.Segments) == 0 {
			t.Errorf("%s: %+v, %v", filepath.Base(path), got, err)
		}
	}
}

func soxSeconds(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := speechsynth.Seconds(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
