package transcription

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// benchScript is about 30 seconds of speech at espeak-ng's default rate.
const benchScript = `Hello, this is Sam Taylor from Taylor and Sons. I am calling about the boiler at our office on
Station Road. It stopped working this morning and there is no hot water in the building. We have twelve people
in today, so it is quite urgent. Could you send an engineer this afternoon if possible? If not, first thing
tomorrow would be fine. Please call me back on oh seven seven double oh nine double oh four five six when you
know a time. Thank you very much, and have a good day.`

// BenchmarkLocalEngines30s measures the default local engines (PocketSphinx speech to text and
// the built-in summarizer) on a 30-second recording: seconds per job and jobs a minute on one
// core. Skipped when the speech tools are not installed (hack/install-speech-tools.sh).
func BenchmarkLocalEngines30s(b *testing.B) {
	p := PocketSphinx{}
	if _, err := exec.LookPath("espeak-ng"); err != nil || !p.Available() {
		b.Skip("pocketsphinx_continuous, sox or espeak-ng is not installed (hack/install-speech-tools.sh)")
	}
	var wav bytes.Buffer
	cmd := exec.Command("espeak-ng", "--stdout", strings.Join(strings.Fields(benchScript), " "))
	cmd.Stdout = &wav
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	// espeak-ng writes 22050 Hz mono 16-bit WAV: 44 header bytes, then 44100 bytes a second.
	audioSeconds := float64(wav.Len()-44) / 44100
	ctx := context.Background()
	b.ResetTimer()
	var total time.Duration
	var last Speech
	for n := 0; n < b.N; n++ {
		t0 := time.Now()
		sp, err := p.Transcribe(ctx, Audio{Data: bytes.NewReader(wav.Bytes()), Filename: "call.wav"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (BuiltinSummarizer{}).Summarize(ctx, SummaryInput{Text: sp.Text, CallerE164: "+447700900123"}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		last = sp
	}
	perJob := total.Seconds() / float64(b.N)
	b.ReportMetric(audioSeconds, "audio-s")
	b.ReportMetric(perJob, "s/job")
	b.ReportMetric(60/perJob, "jobs/min/core")
	fmt.Printf("local engines on %.1f s of speech: %.2f s a job, %.1f jobs a minute per core; recognised: %q\n",
		audioSeconds, perJob, 60/perJob, last.Text)
}
