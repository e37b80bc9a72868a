package transcription

import (
	"bytes"
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePocketSphinx(t *testing.T) {
	out := `hello there
<s> 0.000 0.090 0.999700
hello 0.100 0.410 0.000613
<sil> 0.420 0.620 0.999900
there(2) 0.630 0.940 0.104962
</s> 0.950 1.000 1.000000
[NOISE] 1.100 1.200 0.5
call me back
<s> 2.000 2.090 0.999700
call 2.100 2.300 0.9
++UH++ 2.300 2.400 0.9
me 2.400 2.500 0.9
back 2.500 2.900 0.9
</s> 2.900 3.000 1.0
`
	got := parsePocketSphinx(out)
	want := Speech{Text: "hello there call me back", Language: "en", Segments: []Segment{
		{Start: 0.1, End: 0.94, Speaker: "speaker", Text: "hello there"},
		{Start: 2.1, End: 2.9, Speaker: "speaker", Text: "call me back"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if empty := parsePocketSphinx(""); empty.Text != "" || len(empty.Segments) != 0 {
		t.Errorf("empty output: %+v", empty)
	}
}

// TestPocketSphinxOnSpeech runs the real engine on speech made by espeak-ng (installed by
// hack/install-speech-tools.sh; skipped without it). PocketSphinx is inaccurate on synthesized
// speech, so only the shape of the result is checked, and that it is repeatable.
func TestPocketSphinxOnSpeech(t *testing.T) {
	p := PocketSphinx{}
	if _, err := exec.LookPath("espeak-ng"); err != nil || !p.Available() {
		t.Skip("pocketsphinx_continuous, sox or espeak-ng is not installed (hack/install-speech-tools.sh)")
	}
	var wav bytes.Buffer
	cmd := exec.Command("espeak-ng", "--stdout", "My boiler is broken.")
	cmd.Stdout = &wav
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := p.Transcribe(ctx, Audio{Data: bytes.NewReader(wav.Bytes()), Filename: "x.wav"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Language != "en" || len(got.Segments) == 0 || got.Text == "" {
		t.Errorf("speech %+v", got)
	}
	again, err := p.Transcribe(ctx, Audio{Data: bytes.NewReader(wav.Bytes()), Filename: "x.wav"})
	if err != nil || again.Text != got.Text {
		t.Errorf("not repeatable: %q then %q (%v)", got.Text, again.Text, err)
	}
	for _, sg := range got.Segments {
		if sg.End <= sg.Start || sg.Text == "" {
			t.Errorf("segment %+v", sg)
		}
	}

	// Bytes that are not audio: permanent.
	if _, err := p.Transcribe(ctx, Audio{Data: strings.NewReader("not audio at all"), Filename: "x.wav"}); !IsPermanent(err) {
		t.Errorf("garbage audio: %v", err)
	}
}
