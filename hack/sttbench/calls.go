package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
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
}

// heldOutFrom is the first call of the held-out group (callScripts), reported apart too.
const heldOutFrom = 44

// runCalls measures the labelled calls, writing each reference and hypothesis to hypsPath
// (none when empty).
func runCalls(hypsPath string) error {
	var hyps *os.File
	if hypsPath != "" {
		f, err := os.Create(hypsPath)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		hyps = f
	}
	return measureCalls(context.Background(), hyps)
}

// measureCalls speaks every labelled call script at telephone quality in Festival's HTS voice,
// as the demo's callers are spoken, transcribes it with Vosk and prints Vosk's WER and how
// often the built-in summarizer gets the callback number, urgency and intent right from its
// transcript and from the script itself.
func measureCalls(ctx context.Context, hyps *os.File) error {
	v := speechsynth.Voice{Festival: speechsynth.FestivalHTSFemale}
	if !speechsynth.UsesFestival(v) {
		return fmt.Errorf("festival and festvox-us-slt-hts are needed: run hack/install-speech-tools.sh")
	}
	vosk := transcription.Vosk{}
	if !vosk.Available() {
		return fmt.Errorf("vosk is not installed: run hack/install-vosk.sh")
	}
	var heard, scripts, heldHeard, heldScripts score
	for i := range callScripts {
		c := &callScripts[i]
		audio, err := speechsynth.Speak(ctx, c.text, v, speechsynth.Telephone)
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
		scripts.addSummary(ctx, c.text, c)
		if i >= heldOutFrom {
			heldHeard.addSummary(ctx, sp.Text, c)
			heldScripts.addSummary(ctx, c.text, c)
		}
		if hyps != nil {
			fmt.Fprintf(hyps, "call %02d\nREF: %s\nHYP: %s\n\n", i+1, c.text, sp.Text)
		}
		fmt.Fprintf(os.Stderr, ".")
	}
	fmt.Fprintln(os.Stderr)
	fmt.Printf("%d labelled calls, Festival %s at telephone quality (8 kHz mu-law, 300-3400 Hz), Vosk %s\n\n",
		len(callScripts), v.Festival, transcription.VoskVersion)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "input\tcalls\twords\tWER\tRTF (CPU s / audio s)\tcallback number right\turgency right\tintent right")
	pct := func(n, of int) string {
		return fmt.Sprintf("%d/%d (%.0f %%)", n, of, 100*float64(n)/float64(max(of, 1)))
	}
	fmt.Fprintf(tw, "Vosk's transcripts\t%d\t%d\t%.1f %%\t%.2f\t%s\t%s\t%s\n", heard.calls, heard.words,
		100*float64(heard.errors)/float64(max(heard.words, 1)), heard.cpu/max(heard.audio, 1e-9),
		pct(heard.callback, heard.calls), pct(heard.urgency, heard.calls), pct(heard.intent, heard.calls))
	fmt.Fprintf(tw, "the scripts themselves\t%d\t–\t0 %%\t–\t%s\t%s\t%s\n", scripts.calls,
		pct(scripts.callback, scripts.calls), pct(scripts.urgency, scripts.calls), pct(scripts.intent, scripts.calls))
	for _, g := range []struct {
		name string
		sc   score
	}{{"held-out group, Vosk's transcripts", heldHeard}, {"held-out group, the scripts", heldScripts}} {
		fmt.Fprintf(tw, "%s\t%d\t–\t–\t–\t%s\t%s\t%s\n", g.name, g.sc.calls,
			pct(g.sc.callback, g.sc.calls), pct(g.sc.urgency, g.sc.calls), pct(g.sc.intent, g.sc.calls))
	}
	return tw.Flush()
}
