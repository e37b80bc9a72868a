package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/switchboard-dev/switchboard/internal/speechsynth"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// callScripts are messages callers leave for a small trades business, labelled by hand with
// what a person taking the message would note: the number to call back (Ofcom's drama
// landlines, read digit by digit as callers do; "" when the caller names none), the urgency
// and the intent (the built-in summarizer's names).
var callScripts = []callSentence{
	{"Hello, this is Priya Shah. I'm calling about a leaking radiator valve in my front room. Could someone come and repair it this week? Please call me back on zero one one three, four nine six, zero four five six. Thank you.", "+441134960456", "high", "repair_request"},
	{"Hi, it's Tom Baker on Station Road. The boiler stopped working this morning and there is no hot water. Please send an engineer today. You can reach me on zero one six one, four nine six, zero seven eight nine.", "+441614960789", "high", "repair_request"},
	{"Good afternoon. I would like a quote to replace the bathroom suite in my flat. There is no rush, next month would be fine. Please call me on zero two zero, seven nine four six, zero zero one eight.", "+442079460018", "low", "request_quote"},
	{"Hello, I'm calling about an invoice you sent last month. I think I was charged twice. Could you check the payment and get back to me on zero one one seven, four nine six, zero three two one?", "+441174960321", "normal", "billing_query"},
	{"Hi, just a quick message to say thank you to the engineer who came yesterday. The shower works perfectly now. If you need a review, call me on zero one two one, four nine six, zero six five four.", "+441214960654", "normal", "general_enquiry"},
	{"Hello, my name is Grace Okafor. I'd like to book a boiler service for next Tuesday morning if you have availability. My number is zero one three one, four nine six, zero two two two.", "+441314960222", "normal", "book_appointment"},
	{"This is an emergency. A pipe has burst under the kitchen sink and water is everywhere. Please call me straight away on zero one four one, four nine six, zero nine one nine.", "+441414960919", "high", "repair_request"},
	{"Hi, it's Ahmed Khan. I want to cancel the appointment booked for Friday, we have sorted it ourselves. Call me back on zero one five one, four nine six, zero three three three if there is a problem.", "+441514960333", "normal", "cancellation"},
	{"Hello, I want to make a complaint. Your engineer was three hours late and left a mess in the hall. I'm very disappointed. Please ring me on zero one one six, four nine six, zero one zero one.", "+441164960101", "normal", "complaint"},
	{"Good morning, Lucy Evans here. Could you tell me how much it would cost to fit a new kitchen tap? No hurry at all. My number is zero one one eight, four nine six, zero five five zero.", "+441184960550", "low", "request_quote"},
	{"Hi, this is Mark from the school on Church Lane. The heating has failed in two classrooms and it is freezing. We need someone urgently. Please call zero one nine one, four nine eight, zero four four four.", "+441914980444", "high", "repair_request"},
	{"Hello, I paid your invoice by bank transfer last week but I have had another reminder. Could somebody look into it? You can call me on zero two nine, two zero one eight, zero seven seven seven.", "+442920180777", "normal", "billing_query"},
	{"Hi, I'm calling to book someone to look at a dripping tap in the bathroom. Any day next week is fine. Call me back on zero one one four, four nine six, zero eight eight one.", "+441144960881", "low", "book_appointment"},
	{"Hello, it's Sarah. The toilet keeps running and won't stop filling. It's not urgent but it is annoying. Please call me on zero two zero, seven nine four six, zero five four three when you can.", "+442079460543", "normal", "repair_request"},
	{"Hi, this is Daniel. Where is the replacement part you ordered for our boiler? The delivery was due on Monday. Ring me on zero one six one, four nine six, zero one one two.", "+441614960112", "normal", "delivery_query"},
	{"Hello, could I get an estimate for replacing all the radiators in a three bedroom house? We are planning for the spring. My number is zero one one three, four nine six, zero six six seven.", "+441134960667", "low", "request_quote"},
	{"Hi, there's a smell of gas in the kitchen. I've turned everything off. Please call me back immediately on zero one two one, four nine six, zero two four eight.", "+441214960248", "high", "repair_request"},
	{"Good afternoon, this is Helen from Oak Tree Nursery. We'd like to arrange a safety check for our boiler before the winter. Could you call me on zero one three one, four nine six, zero five one five?", "+441314960515", "normal", "book_appointment"},
	{"Hello, I'd like to cancel my annual service plan. I'm moving house next month. Please call me on zero one four one, four nine six, zero seven two six to confirm.", "+441414960726", "normal", "cancellation"},
	{"Hi, I've been charged for a call out that never happened. Can you sort out a refund? Call me on zero one five one, four nine six, zero four zero nine.", "+441514960409", "normal", "billing_query"},
	{"Hello, it's Peter Brown. The new radiator you fitted is leaking from the bottom valve. Please send someone today. My number is zero one one six, four nine six, zero eight three two.", "+441164960832", "high", "repair_request"},
	{"Hi, I'm looking for a quote for a new combi boiler. Can you give me a price for supply and fitting? Call me on zero one one seven, four nine six, zero one nine four.", "+441174960194", "normal", "request_quote"},
	{"Good morning, this is Anna. I'd like to reschedule my appointment from Wednesday to Thursday afternoon. Please call me back on zero one one eight, four nine six, zero three six eight.", "+441184960368", "normal", "book_appointment"},
	{"Hello, I am really unhappy with the work done on my bathroom. The tiles are cracked and nobody has called me back. I want to complain. Ring me on zero two zero, seven nine four six, zero nine six zero.", "+442079460960", "normal", "complaint"},
	{"Hi, this is Raj at the corner shop. Our water heater has no power and we have customers waiting. It's urgent, please call zero one nine one, four nine eight, zero seven one three.", "+441914980713", "high", "repair_request"},
	{"Hello, just letting you know that I have posted the cheque for the last invoice. No need to do anything. If there is a problem my number is zero two nine, two zero one eight, zero two six one.", "+442920180261", "low", "billing_query"},
	{"Hi, could you send someone to bleed the radiators and check the pressure? Whenever you have a free slot is fine. Call me on zero one one four, four nine six, zero nine zero five.", "+441144960905", "low", "repair_request"},
	{"Hello, my name is James Wilson. I'd like to book an engineer to fit a new shower next month. Could you call me on zero one six one, four nine six, zero four seven one?", "+441614960471", "low", "book_appointment"},
	{"Hi, the outside tap has frozen and split. Water is pouring down the wall. Please come as soon as possible. My number is zero one one three, four nine six, zero three zero three.", "+441134960303", "high", "repair_request"},
	{"Good afternoon, this is Fiona. How much do you charge for a landlord gas safety certificate? Please call me back on zero one three one, four nine six, zero eight four six.", "+441314960846", "normal", "request_quote"},
	{"Hello, this is Chris. The boiler you serviced on Monday is making a loud banging noise. Could someone call me back on oh one two one, four nine six, oh nine three seven?", "+441214960937", "normal", "repair_request"},
	{"Hi, it's Emma. I'd like a quote to move a radiator to the other wall of the lounge. No rush. My number is oh one four one, four nine six, oh two nine one.", "+441414960291", "low", "request_quote"},
	{"Hello, I'm chasing a parcel of parts that was meant to be delivered to my house for the job on Friday. Call me on oh one five one, four nine six, oh six zero eight.", "+441514960608", "normal", "delivery_query"},
	{"Hi, this is Olivia. I booked a visit for tomorrow but I need to cancel it, I'm sorry. You can reach me on oh two zero, seven nine four six, oh seven one five.", "+442079460715", "normal", "cancellation"},
	{"Hello, it's Sam Jones. Please call me back about the job at my mother's house. My number is zero one one six, four nine six, zero two double three.", "+441164960233", "normal", "callback_request"},
	{"Hi, this is Kate from Greenway Dental. Our staff toilet is blocked. Could you call me on zero one one seven, four nine six, zero double five eight?", "+441174960558", "normal", "repair_request"},

	{"Hi, it's Priya again. Just to say the engineer fixed the valve and everything is fine now. Thank you very much. No need to call back.", "", "low", "general_enquiry"},
	{"Hello, I'm calling to ask what time your office opens on Saturday. I'll try again later.", "", "normal", "general_enquiry"},
	{"Hi, this is Tom. The boiler is broken again and there is no hot water. Please call me back on this number as soon as you can.", "", "high", "repair_request"},
	{"Good morning, I'd like to book a service for my boiler some time next month. Please ring me back on the number I'm calling from.", "", "low", "book_appointment"},
	{"Hello, I got your invoice today and I think the amount is wrong. Could somebody call me back please?", "", "normal", "billing_query"},
	{"Hi, I want to complain about the noise your van made at six in the morning. It was unacceptable.", "", "normal", "complaint"},
	{"Hello, can you give me a price for a new hot water cylinder? Call me back when you have a moment.", "", "low", "request_quote"},
	{"Hi, I need to go for lunch at two, so if you call back please ring after three. It's about the leak under the bath.", "", "high", "repair_request"},

	// Written after the word lists last changed, and not used to change them: the held-out group.
	{"Hello, this is Margaret Hughes. The thermostat in the hall has gone blank and the house is getting cold. Could an engineer pop round? My number is zero one one three, four nine six, zero seven four one.", "+441134960741", "normal", "repair_request"},
	{"Hi there, it's Dev from the dental practice. We want to move our annual boiler check to a Saturday if that's possible. Ring me on zero one two one, four nine six, zero five zero two.", "+441214960502", "normal", "book_appointment"},
	{"Hello, I've had a letter saying I owe forty pounds but I paid in full on the day. Please can someone phone me on zero one six one, four nine six, zero nine two six.", "+441614960926", "normal", "billing_query"},
	{"Good evening. Water is coming through the ceiling from the flat upstairs and it's getting worse. Please phone me now on zero two zero, seven nine four six, zero three one nine.", "+442079460319", "high", "repair_request"},
	{"Hi, I was wondering roughly what you'd charge to install an outside tap. I'm just getting a few prices together, so no rush. Call me on zero one three one, four nine six, zero six zero seven.", "+441314960607", "low", "request_quote"},
	{"Hello, it's Brian. Please don't send anyone on Thursday after all, we've decided not to go ahead with the job. My number is zero one four one, four nine six, zero one eight five.", "+441414960185", "normal", "cancellation"},
	{"Hi, this is Sophie Clarke. Frankly I'm fed up. Your engineer has been out three times and the radiator is still cold. I'd like to speak to a manager. Call me on zero one one seven, four nine six, zero two seven three.", "+441174960273", "normal", "complaint"},
	{"Hello, I'm ringing to check whether the new pump you ordered for us has arrived yet. Give me a call on zero one five one, four nine six, zero eight one six.", "+441514960816", "normal", "delivery_query"},
	{"Hi, it's Neil. Could you give me a ring when you get a moment? It's about some work at the shop. My number is zero one one six, four nine six, zero four three eight.", "+441164960438", "low", "callback_request"},
	{"Hello, I just wanted to say the new boiler is brilliant and the lads were very tidy. I'll recommend you to my neighbours. Thanks again.", "", "normal", "general_enquiry"},

	// Written before the intent classifier and its training corpus, and not used to change
	// either: the second held-out group.
	{"Hiya, it's Carol on Beech Grove. There's water dripping through the light fitting in the kitchen and I've had to turn the electrics off. Can somebody get out to us this afternoon? I'm on zero one one four, four nine six, zero three seven two.", "+441144960372", "high", "repair_request"},
	{"Morning, Gary here. The pressure on our boiler keeps dropping and I have to top it up every couple of days. Could one of your lads take a look when he's nearby? My number's zero one five one, four nine six, zero six four four.", "+441514960644", "normal", "repair_request"},
	{"Hello, the extractor fan in the bathroom has packed in. It's not the end of the world, so whenever suits. Ring me on zero two zero, seven nine four six, zero two eight one.", "+442079460281", "low", "repair_request"},
	{"Help, the toilet's overflowing and it's coming through to the room below. I can't find the stopcock. Please ring me back quick on zero two nine, two zero one eight, zero five three eight.", "+442920180538", "high", "repair_request"},
	{"Hello, it's Mrs Patel. Our boiler's yearly service is due and I'd like to get it in the diary, ideally a weekday morning. Call me on zero one one six, four nine six, zero nine five three.", "+441164960953", "normal", "book_appointment"},
	{"Hi, I'm after a slot for someone to come and fit a new thermostat some time in the next few weeks. Tuesdays and Thursdays are best for us. My number is zero one two one, four nine six, zero seven seven nine.", "+441214960779", "low", "book_appointment"},
	{"Hello, we're thinking of having underfloor heating put in the extension. Could you give us a rough idea of what that would set us back? We're only planning at the moment. Zero one one three, four nine six, zero five eight eight.", "+441134960588", "low", "request_quote"},
	{"Hi, it's Jo. A friend recommended you. I need a new boiler and I'm getting three prices, so could someone come round and price it up? I'm on oh one six one, four nine six, oh two one seven.", "+441614960217", "normal", "request_quote"},
	{"Hello, I've just looked at my bank statement and the direct debit came out twice this month. Can somebody sort that out for me? My number is zero one three one, four nine six, zero four six three.", "+441314960463", "normal", "billing_query"},
	{"Hi, my accountant needs a VAT receipt for the work you did in March. Could you email one over? Thanks.", "", "normal", "billing_query"},
	{"Hello, it's Martin. The engineer said the new valve would be with us by Wednesday and nothing's turned up. Can you find out where it's got to? Ring me on zero one one eight, four nine six, zero seven three zero.", "+441184960730", "normal", "delivery_query"},
	{"Hi, a courier dropped a big box of copper pipe on my doorstep this morning with your name on it. Do you want me to hang on to it until your fitter comes?", "", "normal", "delivery_query"},
	{"Hello, I'm not at all happy. Your fitter left the back door wide open and muddy footprints all over the carpet. I expect better than that. Call me on zero one four one, four nine six, zero eight five two.", "+441414960852", "normal", "complaint"},
	{"I've rung four times this week and nobody ever gets back to me. It's just not good enough and I want someone senior to deal with it.", "", "normal", "complaint"},
	{"Hi, it's Becky. We won't need the plumber on Monday any more, my brother-in-law has sorted the tap. Sorry for the short notice. Zero one one seven, four nine six, zero five zero six.", "+441174960506", "normal", "cancellation"},
	{"Hello, please take me off your list for the yearly boiler service, we've sold the house. Ring zero one nine one, four nine eight, zero one two seven if you need anything.", "+441914980127", "normal", "cancellation"},
	{"Hi, it's Stuart Reid. Could somebody give me a bell back? It's easier to explain over the phone. I'm on zero one one three, four nine six, zero nine eight four.", "+441134960984", "normal", "callback_request"},
	{"Hello, this is Linda from the letting agency. I need a quick word with someone in the office about one of our tenants. My number is zero one one four, four nine six, zero one five nine.", "+441144960159", "normal", "callback_request"},
	{"Hi there, do you cover the Wirral or is that too far out for you? Just wondering before I go any further.", "", "normal", "general_enquiry"},
	{"Hello, just so you know, we'll be away the first two weeks of August, so the key is with the neighbour at number twelve.", "", "low", "general_enquiry"},

	// Written after the classifier and its corpus were settled, and not used to change either:
	// the third held-out group.
	{"Hello, it's Dawn at twenty two Mill Street. Our radiator pipe has sprung a leak behind the sofa and the floorboards are soaking. Can you send a plumber out this morning? Zero one one six, four nine six, zero seven zero four.", "+441164960704", "high", "repair_request"},
	{"Hi, this is Alan. The boiler has started making a humming noise and the hot water goes lukewarm after a few minutes. Could someone have a look at it this week? My number is zero one three one, four nine six, zero three eight six.", "+441314960386", "normal", "repair_request"},
	{"Hello, the handle on the upstairs toilet has gone a bit loose. No panic, next time you're in the area will do. I'm on zero one one eight, four nine six, zero nine four two.", "+441184960942", "low", "repair_request"},
	{"Please, somebody help, the boiler is giving off a burning smell and the pressure gauge is in the red. I've switched it off at the wall.", "", "high", "repair_request"},
	{"Morning, it's Harriet from the Red Lion. We'd like to get the gas safety inspection done for the pub, any weekday before eleven. Can you let me know what dates you've got? Zero one nine one, four nine eight, zero six three three.", "+441914980633", "normal", "book_appointment"},
	{"Hi, I'd like to get my mum's boiler serviced some time after Easter. There's no hurry, she's in all week. Call me on zero one one three, four nine six, zero two five seven.", "+441134960257", "low", "book_appointment"},
	{"Hello, could you tell me what you'd charge to swap our electric shower for a mixer one? I'm on oh two oh, seven nine four six, oh four one two.", "+442079460412", "normal", "request_quote"},
	{"Hi there, we're doing up the loft next year and want a radiator up there. Could you work out a rough cost when you've got time? Zero one five one, four nine six, zero eight eight three.", "+441514960883", "low", "request_quote"},
	{"Hello, it's Ken Hall. The invoice for the new cylinder has labour at six hours but the lads were only here for three. Can you look at it again? Zero one two one, four nine six, zero one four five.", "+441214960145", "normal", "billing_query"},
	{"Hi, I'd like to pay the outstanding balance on my account but the link in your email doesn't work. Can you help?", "", "normal", "billing_query"},
	{"Hello, I'm ringing about the shower screen we ordered through you. The supplier says it left the warehouse on Monday but it still isn't here. My number is zero one four one, four nine six, zero five six nine.", "+441414960569", "normal", "delivery_query"},
	{"Hello, I'm very let down. Your engineer chipped our new worktop and didn't say a word about it. Somebody needs to take responsibility. Zero one one seven, four nine six, zero eight one one.", "+441174960811", "normal", "complaint"},
	{"Hi, it's Pauline. Can you cross me off for Wednesday's service? I've had to go into hospital. I'll ring to rebook when I'm home. Zero one six one, four nine six, zero nine nine one.", "+441614960991", "normal", "cancellation"},
	{"Hello, this is Graham Porter from Porter and Sons builders. I've got something I'd like to run past you. Can you ring me when you're free? Zero one one four, four nine six, zero four two zero.", "+441144960420", "normal", "callback_request"},
	{"Hi, are your engineers able to work on underfloor heating manifolds, or do you only do radiators? Just asking before I look elsewhere.", "", "normal", "general_enquiry"},
	{"Hello, just wanted to let you know your engineer Mike was lovely with my dad. No need to ring back.", "", "low", "general_enquiry"},
}

// The groups of callScripts, reported apart: the calls before heldOutFrom are those the
// summarizer was tuned on; the three groups from heldOutFrom, heldOut2From and heldOut3From
// were held out.
const (
	heldOutFrom  = 44
	heldOut2From = 54
	heldOut3From = 74
)

// callGroup is a range of callScripts reported on its own.
type callGroup struct {
	name     string
	from, to int
}

func callGroups() []callGroup {
	return []callGroup{
		{"tuned on", 0, heldOutFrom},
		{"held out, first group", heldOutFrom, heldOut2From},
		{"held out, second group", heldOut2From, heldOut3From},
		{"held out, third group", heldOut3From, len(callScripts)},
	}
}

// runCalls measures the labelled calls, writing each reference and hypothesis to hypsPath
// (none when empty). With scriptsOnly it scores the summarizer on the scripts alone, without
// speech. limit > 0 takes only the first limit calls of each group.
func runCalls(hypsPath string, scriptsOnly bool, limit int) error {
	var hyps *os.File
	if hypsPath != "" && !scriptsOnly {
		f, err := os.Create(hypsPath)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		hyps = f
	}
	return measureCalls(context.Background(), hyps, scriptsOnly, limit)
}

// measureCalls speaks every labelled call script at telephone quality in Festival's HTS voice,
// as the demo's callers are spoken, transcribes it with Vosk and prints Vosk's WER and how
// often the built-in summarizer gets the callback number, urgency and intent right from its
// transcript and from the script itself, over all calls and per group.
func measureCalls(ctx context.Context, hyps *os.File, scriptsOnly bool, limit int) error {
	v := speechsynth.Voice{Festival: speechsynth.FestivalHTSFemale}
	vosk := transcription.Vosk{}
	if !scriptsOnly {
		if !speechsynth.UsesFestival(v) {
			return fmt.Errorf("festival and festvox-us-slt-hts are needed: run hack/install-speech-tools.sh")
		}
		if !vosk.Available() {
			return fmt.Errorf("vosk is not installed: run hack/install-vosk.sh")
		}
	}
	groups := callGroups()
	var heard, scripts score
	heardBy, scriptsBy := make([]score, len(groups)), make([]score, len(groups))
	for gi, g := range groups {
		to := g.to
		if limit > 0 {
			to = min(to, g.from+limit)
		}
		for i := g.from; i < to; i++ {
			c := &callScripts[i]
			scripts.addSummary(ctx, c.text, c)
			scriptsBy[gi].addSummary(ctx, c.text, c)
			if scriptsOnly {
				continue
			}
			audio, err := cachedSpeech(ctx, c.text, v)
			if err != nil {
				return err
			}
			secs, err := speechsynth.Seconds(audio)
			if err != nil {
				return err
			}
			cpu0, t0 := childCPU(), time.Now()
			sp, err := vosk.Transcribe(ctx, transcription.Audio{Data: bytes.NewReader(audio), Filename: "call.wav", ContentType: "audio/wav"})
			if err != nil {
				return fmt.Errorf("call %d: %w", i+1, err)
			}
			heard.wall += time.Since(t0).Seconds()
			heard.cpu += childCPU() - cpu0
			heard.audio += secs
			ref, hyp := words(c.text), words(sp.Text)
			heard.errors += editDistance(ref, hyp)
			heard.words += len(ref)
			heard.addSummary(ctx, sp.Text, c)
			heardBy[gi].addSummary(ctx, sp.Text, c)
			if hyps != nil {
				fmt.Fprintf(hyps, "call %02d (%s)\nREF: %s\nHYP: %s\n\n", i+1, g.name, c.text, sp.Text)
			}
			fmt.Fprintf(os.Stderr, ".")
		}
	}
	fmt.Fprintln(os.Stderr)
	if scriptsOnly {
		fmt.Printf("%d labelled calls, the scripts alone (no speech)\n\n", scripts.calls)
	} else {
		fmt.Printf("%d labelled calls, Festival %s at telephone quality (8 kHz mu-law, 300-3400 Hz), Vosk %s\n\n",
			heard.calls, v.Festival, transcription.VoskVersion)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "input\tcalls\twords\tWER\tRTF (CPU s / audio s)\tcallback number right\turgency right\tintent right")
	pct := func(n, of int) string {
		return fmt.Sprintf("%d/%d (%.0f %%)", n, of, 100*float64(n)/float64(max(of, 1)))
	}
	row := func(name string, sc score) {
		fmt.Fprintf(tw, "%s\t%d\t–\t–\t–\t%s\t%s\t%s\n", name, sc.calls,
			pct(sc.callback, sc.calls), pct(sc.urgency, sc.calls), pct(sc.intent, sc.calls))
	}
	if !scriptsOnly {
		fmt.Fprintf(tw, "Vosk's transcripts\t%d\t%d\t%.1f %%\t%.2f\t%s\t%s\t%s\n", heard.calls, heard.words,
			100*float64(heard.errors)/float64(max(heard.words, 1)), heard.cpu/max(heard.audio, 1e-9),
			pct(heard.callback, heard.calls), pct(heard.urgency, heard.calls), pct(heard.intent, heard.calls))
		for gi, g := range groups {
			row(g.name+", Vosk's transcripts", heardBy[gi])
		}
	}
	row("the scripts themselves", scripts)
	for gi, g := range groups {
		row(g.name+", the scripts", scriptsBy[gi])
	}
	return tw.Flush()
}

// cachedSpeech is speechsynth.Speak at telephone quality, kept in $SWITCHBOARD_CACHE/sttbench
// by a hash of the voice and text: Festival takes seconds per call on a shared machine and
// says the same text the same way each time.
func cachedSpeech(ctx context.Context, text string, v speechsynth.Voice) ([]byte, error) {
	key := sha256.Sum256([]byte(v.Festival + "\x00" + v.Name + "\x00" + strconv.Itoa(v.WordsPerMinute) + "\x00telephone\x00" + text))
	path := filepath.Join(filepath.Dir(filepath.Dir(transcription.VoskDir())), "sttbench", hex.EncodeToString(key[:])+".wav")
	if audio, err := os.ReadFile(path); err == nil {
		return audio, nil
	}
	audio, err := speechsynth.Speak(ctx, text, v, speechsynth.Telephone)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, audio, 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
	}
	return audio, nil
}
