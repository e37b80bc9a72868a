// Command sttbench measures the speech-to-text engines on a fixed test set the project makes:
// phone-call sentences (names, addresses, UK numbers read digit by digit, dates) spoken by
// espeak-ng in several voices and rates, at 16 kHz and band-limited to telephone audio
// (8 kHz mu-law, 300–3400 Hz), and the human recordings of Debian's pocketsphinx-testdata at
// both rates. It prints word error rate and real-time factor per engine and set, and how often
// the built-in summarizer gets the callback number, urgency and intent right from each
// engine's transcripts. `make bench-stt` runs it (docs/transcription.md has the figures).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/switchboard-dev/switchboard/internal/seed"
	"github.com/switchboard-dev/switchboard/internal/speechsynth"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// callSentence is a caller's message and what its summary should say.
type callSentence struct {
	text     string
	callback string // E.164; "" when the caller names none (the summary then has none)
	urgency  string
	intent   string
}

// callerE164 is the number the test calls come from, given to the summarizer as it is in
// service; a summary that answered with it would be wrong.
const callerE164 = "+441514960999"

var sentences = []callSentence{
	{"Hi, this is Sarah from Greenway Dental. I need to reschedule my appointment on Thursday the fourteenth of March. Please call me back on oh one one four, four nine six, oh one two three.", "+441144960123", "normal", "book_appointment"},
	{"Hello, my name is David Clarke. The boiler has stopped working and we have no hot water. It is quite urgent. My number is oh one one six, four nine six, oh four five six.", "+441164960456", "high", "repair_request"},
	{"Good morning, I would like a quote for a new kitchen at twelve Mill Lane, London. There is no rush. You can reach me on oh two oh, seven nine four six, oh oh one eight.", "+442079460018", "low", "request_quote"},
	{"Hi, it's Emma Wilson. I'm calling about the invoice you sent on the second of June. I think I paid it twice. Could you call me back on oh one six one, four nine six, oh oh two two?", "+441614960022", "normal", "billing_query"},
	{"This is James from Oakfield Surgery. We have a water leak in the waiting room and it is getting worse. Please send someone straight away. Call me on oh one one seven, four nine six, oh seven eight nine.", "+441174960789", "high", "repair_request"},
	{"Hello, I want to cancel my order from last week, order number four five two one. Please call me back on oh one two one, four nine six, oh three two one.", "+441214960321", "normal", "cancellation"},
	{"Hi, this is Lucy Evans at fourteen Station Road, Manchester. I would like to book a service for my car next Tuesday. My number is oh one six one, four nine six, oh oh seven seven.", "+441614960077", "low", "book_appointment"},
	{"Good afternoon, Michael Brown here. Where is my parcel? The delivery was due on Friday the tenth. Ring me back on oh one three one, four nine six, oh six five four.", "+441314960654", "normal", "delivery_query"},
	{"Hello, I am really unhappy with the repair you did yesterday. It is still not working. I want to make a complaint. Call me on oh two oh, seven nine four six, oh oh five five.", "+442079460055", "normal", "complaint"},
	{"Hi, it's Priya. Just letting you know the engineer can come on the twenty first of April at ten in the morning. No need to call back.", "", "low", "general_enquiry"},
	{"Hello, this is Tom at Riverside Cafe. Our fridge is broken and we open in an hour. It's an emergency. Please phone oh one four one, four nine six, oh two four six.", "+441414960246", "high", "repair_request"},
	{"Hi, could you tell me how much it costs to replace a window? I live at forty two Park Avenue, Leeds. My number is oh one one three, four nine six, oh oh three three.", "+441134960033", "normal", "request_quote"},
}

var voices = []speechsynth.Voice{
	{Name: "en-gb", WordsPerMinute: 150},
	{Name: "en-us", WordsPerMinute: 175},
	{Name: "en-gb-scotland", WordsPerMinute: 130},
}

// utterance is one recording of the test set.
type utterance struct {
	set, id   string
	audio     []byte
	seconds   float64
	reference string
	call      *callSentence
}

type engine struct {
	name string
	stt  transcription.SpeechToText
}

type score struct {
	errors, words             int
	cpu, wall, audio          float64
	callback, urgency, intent int
	calls                     int
}

func main() {
	limit := flag.Int("limit", 0, "use only the first N sentences and N human recordings (0: all), for a quick run")
	openaiURL := flag.String("openai-url", os.Getenv("BENCH_STT_OPENAI_URL"),
		"also measure an OpenAI-compatible speech server at this API root (key from SPEECH_API_KEY)")
	openaiModel := flag.String("openai-model", "whisper-1", "model for -openai-url")
	hyps := flag.String("hypotheses", "", "write every reference and hypothesis to this file")
	demo := flag.Bool("demo-voices", false, "instead: Vosk's WER and callback number on each demo call's script in each of -voices "+
		"(espeak-ng name:words-per-minute or festival:voice)")
	demoVoices := flag.String("voices", "en-gb:150,en-us:150,en-gb-x-rp:150,en-gb-scotland:150,en-us+edward:150",
		"with -demo-voices: espeak-ng voice:words-per-minute, comma-separated")
	calls := flag.Bool("calls", false, "instead: Vosk and the built-in summarizer on the labelled call scripts, spoken by Festival "+
		"(-limit N: the first N of each group)")
	scriptsOnly := flag.Bool("scripts", false, "with -calls: the summarizer on the scripts alone, without speech (seconds, not minutes)")
	flag.Parse()
	if *calls {
		if err := runCalls(*hyps, *scriptsOnly, *limit); err != nil {
			fmt.Fprintln(os.Stderr, "sttbench:", err)
			os.Exit(1)
		}
		return
	}
	if *demo {
		if err := measureDemoVoices(*demoVoices); err != nil {
			fmt.Fprintln(os.Stderr, "sttbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*limit, *openaiURL, *openaiModel, *hyps); err != nil {
		fmt.Fprintln(os.Stderr, "sttbench:", err)
		os.Exit(1)
	}
}

func run(limit int, openaiURL, openaiModel, hypsPath string) error {
	ctx := context.Background()
	if !speechsynth.Available() {
		return fmt.Errorf("espeak-ng and sox are needed: run hack/install-speech-tools.sh")
	}
	set, err := testSet(ctx, limit)
	if err != nil {
		return err
	}
	engines := []engine{}
	if ps := (transcription.PocketSphinx{}); ps.Available() {
		engines = append(engines, engine{"PocketSphinx (Debian 0.8+5prealpha, en-us)", ps})
	}
	if v := (transcription.Vosk{}); v.Available() {
		engines = append(engines, engine{"Vosk " + transcription.VoskVersion + " (small en-us model)", v})
	}
	if openaiURL != "" {
		stt, _, err := transcription.NewEngines(transcription.EngineConfig{Speech: transcription.SpeechOpenAI, SpeechURL: openaiURL,
			SpeechModel: openaiModel, SpeechAPIKey: os.Getenv("SPEECH_API_KEY")})
		if err != nil {
			return err
		}
		engines = append(engines, engine{"OpenAI-compatible (" + openaiModel + ")", stt})
	}
	if len(engines) == 0 {
		return fmt.Errorf("no speech engine is installed: run hack/install-speech-tools.sh and hack/install-vosk.sh")
	}
	var hyps *bufio.Writer
	if hypsPath != "" {
		f, err := os.Create(hypsPath)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		hyps = bufio.NewWriter(f)
		defer func() { _ = hyps.Flush() }()
	}
	sets := []string{}
	for _, u := range set {
		if len(sets) == 0 || sets[len(sets)-1] != u.set {
			sets = append(sets, u.set)
		}
	}
	results := map[string]map[string]*score{}
	for _, e := range engines {
		results[e.name] = map[string]*score{}
		for _, s := range sets {
			results[e.name][s] = &score{}
		}
		for _, u := range set {
			sc := results[e.name][u.set]
			cpu0 := childCPU()
			t0 := time.Now()
			sp, err := e.stt.Transcribe(ctx, transcription.Audio{Data: bytes.NewReader(u.audio), Filename: "call.wav", ContentType: "audio/wav"})
			if err != nil {
				return fmt.Errorf("%s on %s/%s: %w", e.name, u.set, u.id, err)
			}
			sc.wall += time.Since(t0).Seconds()
			sc.cpu += childCPU() - cpu0
			sc.audio += u.seconds
			ref, hyp := words(u.reference), words(sp.Text)
			sc.errors += editDistance(ref, hyp)
			sc.words += len(ref)
			if u.call != nil {
				sc.addSummary(ctx, sp.Text, u.call)
			}
			if hyps != nil {
				fmt.Fprintf(hyps, "%s\t%s/%s\nREF: %s\nHYP: %s\n\n", e.name, u.set, u.id, strings.Join(ref, " "), strings.Join(hyp, " "))
			}
			fmt.Fprintf(os.Stderr, ".")
		}
		fmt.Fprintln(os.Stderr)
	}

	fmt.Printf("Speech-to-text benchmark, %s, %d CPUs\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "engine\tset\tutterances\twords\tWER\tRTF (CPU s / audio s)\twall s / audio s\tcallback number right\turgency right\tintent right")
	for _, e := range engines {
		for _, s := range sets {
			sc := results[e.name][s]
			n := 0
			for _, u := range set {
				if u.set == s {
					n++
				}
			}
			cb, ur, in := "–", "–", "–"
			if sc.calls > 0 {
				cb, ur, in = pct(sc.callback, sc.calls), pct(sc.urgency, sc.calls), pct(sc.intent, sc.calls)
			}
			rtf := "– (not on this machine)"
			if sc.cpu > 0 {
				rtf = fmt.Sprintf("%.2f", sc.cpu/sc.audio)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f %%\t%s\t%.2f\t%s\t%s\t%s\n", e.name, s, n, sc.words,
				100*float64(sc.errors)/float64(max(sc.words, 1)), rtf, sc.wall/sc.audio, cb, ur, in)
		}
	}
	// The summarizer on the scripts themselves: what a perfect transcript would give.
	var ref score
	for _, u := range set {
		if u.call == nil || u.set != sets[0] {
			continue
		}
		ref.addSummary(ctx, u.reference, u.call)
	}
	fmt.Fprintf(tw, "(the scripts themselves)\t%s\t%d\t–\t0 %%\t–\t–\t%s\t%s\t%s\n", sets[0], ref.calls, pct(ref.callback, ref.calls),
		pct(ref.urgency, ref.calls), pct(ref.intent, ref.calls))
	return tw.Flush()
}

// addSummary counts what the built-in summarizer gets right from a transcript of call.
func (sc *score) addSummary(ctx context.Context, transcript string, call *callSentence) {
	sc.calls++
	sum, _ := transcription.BuiltinSummarizer{}.Summarize(ctx, transcription.SummaryInput{Text: transcript, CallerE164: callerE164})
	if got := sum.CallbackNumber; (got == nil && call.callback == "") || (got != nil && *got == call.callback) {
		sc.callback++
	}
	if sum.Urgency == call.urgency {
		sc.urgency++
	}
	if sum.Intent == call.intent {
		sc.intent++
	}
}

func pct(n, of int) string { return fmt.Sprintf("%d/%d", n, of) }

// testSet makes the synthesized sets and reads the human recordings.
func testSet(ctx context.Context, limit int) ([]utterance, error) {
	calls := sentences
	if limit > 0 && limit < len(calls) {
		calls = calls[:limit]
	}
	var wide, tel []utterance
	for vi, v := range voices {
		for i := range calls {
			c := &calls[i]
			id := fmt.Sprintf("%02d-%s-%d", i+1, v.Name, v.WordsPerMinute)
			for _, f := range []speechsynth.Format{speechsynth.Wideband, speechsynth.Telephone} {
				// Every other telephone recording is a-law, as some platforms send.
				ff := f
				if f == speechsynth.Telephone && (i+vi)%2 == 1 {
					ff = speechsynth.TelephoneALaw
				}
				audio, err := speechsynth.Speak(ctx, c.text, v, ff)
				if err != nil {
					return nil, err
				}
				secs, err := speechsynth.Seconds(audio)
				if err != nil {
					return nil, err
				}
				u := utterance{id: id, audio: audio, seconds: secs, reference: c.text, call: c}
				if f == speechsynth.Wideband {
					u.set = "synthesized calls, 16 kHz"
					wide = append(wide, u)
				} else {
					u.set = "synthesized calls, 8 kHz telephone"
					tel = append(tel, u)
				}
			}
		}
	}
	human, err := humanRecordings(ctx, limit)
	if err != nil {
		return nil, err
	}
	return append(append(wide, tel...), human...), nil
}

// testData is where Debian's pocketsphinx-testdata puts its recordings.
const testData = "/usr/share/pocketsphinx/test/data"

var transcriptLine = regexp.MustCompile(`^<s>\s*(.*?)\s*</s>\s*\((\S+)\)\s*$`)

// humanRecordings reads the librivox and cards recordings (16 kHz) of pocketsphinx-testdata
// with their transcriptions, and makes an 8 kHz telephone copy of each.
func humanRecordings(ctx context.Context, limit int) ([]utterance, error) {
	var wide, tel []utterance
	for _, dir := range []struct{ dir, transcript string }{{"librivox", "transcription"}, {"cards", "cards.transcription"}} {
		data, err := os.ReadFile(filepath.Join(testData, dir.dir, dir.transcript))
		if err != nil {
			fmt.Fprintf(os.Stderr, "sttbench: no human recordings (%v): install pocketsphinx-testdata (hack/install-speech-tools.sh)\n", err)
			return nil, nil
		}
		n := 0
		for _, line := range strings.Split(string(data), "\n") {
			m := transcriptLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil || (limit > 0 && n >= (limit+1)/2) {
				continue
			}
			n++
			name := m[2]
			if !strings.HasSuffix(name, ".wav") {
				name += ".wav"
			}
			raw, err := os.ReadFile(filepath.Join(testData, dir.dir, name))
			if err != nil {
				return nil, err
			}
			for _, f := range []speechsynth.Format{speechsynth.Wideband, speechsynth.Telephone} {
				audio, err := speechsynth.Convert(ctx, raw, f)
				if err != nil {
					return nil, err
				}
				secs, err := speechsynth.Seconds(audio)
				if err != nil {
					return nil, err
				}
				u := utterance{id: dir.dir + "/" + m[2], audio: audio, seconds: secs, reference: m[1]}
				if f == speechsynth.Wideband {
					u.set = "human (pocketsphinx-testdata), 16 kHz"
					wide = append(wide, u)
				} else {
					u.set = "human (pocketsphinx-testdata), 8 kHz telephone"
					tel = append(tel, u)
				}
			}
		}
	}
	return append(wide, tel...), nil
}

var digitWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// words normalises a transcript for scoring: lower case, punctuation dropped, digits spelt
// out one by one (the scripts read numbers digit by digit).
func words(text string) []string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteString(" " + digitWords[r-'0'] + " ")
		case r >= 'a' && r <= 'z' || r == '\'':
			b.WriteRune(r)
		default:
			b.WriteByte(' ')
		}
	}
	return strings.Fields(b.String())
}

// editDistance is the word-level Levenshtein distance: substitutions, deletions and insertions.
func editDistance(ref, hyp []string) int {
	prev := make([]int, len(hyp)+1)
	cur := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			cost := 1
			if ref[i-1] == hyp[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(hyp)]
}

// childCPU is the CPU time (user and system) of the finished child processes so far: the
// engines run as child processes, so the difference around a call is that call's CPU time.
func childCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// measureDemoVoices speaks each demo call's script at telephone quality (as the demo does) in
// each voice and prints Vosk's WER and whether the built-in summarizer finds the callback
// number in its transcript, to choose the demo's voices.
func measureDemoVoices(list string) error {
	ctx := context.Background()
	if !speechsynth.Available() {
		return fmt.Errorf("espeak-ng and sox are needed: run hack/install-speech-tools.sh")
	}
	vosk := transcription.Vosk{}
	if !vosk.Available() {
		return fmt.Errorf("vosk is not installed: run hack/install-vosk.sh")
	}
	var voices []speechsynth.Voice
	for _, item := range strings.Split(list, ",") {
		var v speechsynth.Voice
		name, rate, _ := strings.Cut(strings.TrimSpace(item), ":")
		if name == "festival" {
			if !speechsynth.FestivalAvailable(rate) {
				return fmt.Errorf("festival voice %q is not installed (hack/install-speech-tools.sh)", rate)
			}
			voices = append(voices, speechsynth.Voice{Festival: rate})
			continue
		}
		v.Name = name
		if _, err := fmt.Sscan(rate, &v.WordsPerMinute); err != nil {
			return fmt.Errorf("voice %q: want name:words-per-minute or festival:voice", item)
		}
		voices = append(voices, v)
	}
	fmt.Printf("Vosk %s on the demo calls at telephone quality (8 kHz mu-law, 300-3400 Hz), %s\n\n", transcription.VoskVersion,
		time.Now().UTC().Format("2006-01-02"))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "story\tvoice\twpm\tWER\tcallback number right\ttranscript")
	for i, d := range seed.DemoScripts() {
		for _, v := range voices {
			audio, err := speechsynth.Speak(ctx, d.Script, v, speechsynth.Telephone)
			if err != nil {
				return err
			}
			sp, err := vosk.Transcribe(ctx, transcription.Audio{Data: bytes.NewReader(audio), Filename: "call.wav", ContentType: "audio/wav"})
			if err != nil {
				return err
			}
			ref := words(d.Script)
			right := "no"
			if transcription.FindCallbackNumber(sp.Text) == d.Callback {
				right = "yes"
			}
			name, wpm := v.Name, strconv.Itoa(v.WordsPerMinute)
			if v.Festival != "" {
				name, wpm = "festival "+v.Festival, "–"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f %%\t%s\t%s\n", i+1, name, wpm,
				100*float64(editDistance(ref, words(sp.Text)))/float64(max(len(ref), 1)), right, sp.Text)
			fmt.Fprintf(os.Stderr, ".")
		}
	}
	fmt.Fprintln(os.Stderr)
	return tw.Flush()
}
