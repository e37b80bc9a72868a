package seed

import (
	"context"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/speechsynth"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestDemoRecordingsAreSpokenStories: every stored demo recording is one of the stories spoken
// at telephone quality, exactly as long as the recording row says (a call with the agent on a
// second channel, a voicemail the caller alone), and a seeded transcript of it says that
// story's script, in segments by speaker.
func TestDemoRecordingsAreSpokenStories(t *testing.T) {
	if !speechsynth.Available() {
		t.Skip("espeak-ng or sox is not installed (hack/install-speech-tools.sh)")
	}
	ctx := context.Background()
	st := storetest.NewStore(t)
	recs, err := recordingstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	demo, err := Demo(ctx, st, DemoOptions{Calls: 12, Recordings: recs})
	if err != nil {
		t.Fatal(err)
	}
	calls, _, err := st.ListCalls(ctx, demo.AccountID, store.CallFilter{Activity: "all", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	scripts := make([]string, len(demoStories))
	for i, s := range demoStories {
		scripts[i] = s.script
	}
	checked, transcribed := 0, 0
	for _, c := range calls {
		if c.RecordingPublicID == nil {
			continue
		}
		rec, err := st.GetRecording(ctx, demo.AccountID, *c.RecordingPublicID)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := recs.Open(ctx, rec.StorageKey)
		if err != nil {
			t.Fatal(err)
		}
		audio, err := io.ReadAll(obj)
		_ = obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		secs, err := speechsynth.Seconds(audio)
		if err != nil {
			t.Fatalf("recording %s: %v", rec.PublicID, err)
		}
		if rate, format := uint32(audio[24])|uint32(audio[25])<<8, uint16(audio[20]); rate != 8000 || format != 7 {
			t.Errorf("recording %s: %d Hz, WAV format %d; want 8000 Hz mu-law (7)", rec.PublicID, rate, format)
		}
		if float64(rec.DurationSeconds) != secs || secs < 10 {
			t.Errorf("recording %s: row says %d s, audio is %.3f s", rec.PublicID, rec.DurationSeconds, secs)
		}
		wantChannels := 2
		if rec.Kind == "voicemail" {
			wantChannels = 1
		}
		if ch := int(audio[22]); ch != wantChannels {
			t.Errorf("recording %s (%s): %d channels, want %d", rec.PublicID, rec.Kind, ch, wantChannels)
		}
		checked++
		if tr, err := st.GetTranscript(ctx, demo.AccountID, rec.ID); err == nil && tr.Status == "completed" {
			transcribed++
			said := map[string]string{}
			for _, sg := range tr.Segments {
				said[sg.Speaker] += sg.Text
				if sg.StartSeconds >= sg.EndSeconds || sg.EndSeconds > secs {
					t.Errorf("recording %s: segment %+v outside the %.1f s recording", rec.PublicID, sg, secs)
				}
			}
			if !slices.Contains(scripts, said["caller"]) {
				t.Errorf("recording %s: the caller's segments %q are no story's script", rec.PublicID, said["caller"])
			}
			if (said["agent"] != "") != (rec.Kind == "call") {
				t.Errorf("recording %s (%s): agent said %q", rec.PublicID, rec.Kind, said["agent"])
			}
		}
	}
	if checked == 0 || transcribed == 0 {
		t.Errorf("%d recordings checked, %d with a seeded transcript: the demo should have both", checked, transcribed)
	}
}
