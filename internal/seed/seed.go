// Package seed fills a database with a believable demo account (for `make run` and
// `switchboard seed`) and with bulk call history (for benchmarks).
package seed

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/speechsynth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// DemoOptions configure the demo account.
type DemoOptions struct {
	Clock clock.PassiveClock
	// Recordings receives the demo audio; nil leaves recordings without audio.
	Recordings recordingstore.Store
	// Progress receives one line per step; nil is quiet.
	Progress io.Writer
	// Calls is how many calls of history to create (default DefaultDemoCalls).
	Calls int
}

// DefaultDemoCalls is the demo account's call history: a few hundred calls over 90 days.
const DefaultDemoCalls = 300

// demoHistory is how far back the demo's calls go.
const demoHistory = 90 * 24 * time.Hour

// DemoAccount is what Demo created.
type DemoAccount struct {
	AccountID       int64
	AccountPublicID string
	OwnerEmail      string
	// OwnerKey is an all-permission key for the owner, shown once.
	OwnerKey string
	// MemberKey is a read-only key for a member.
	MemberKey string
}

// demoStory is one recorded call's script and the summary a person would write of it.
type demoStory struct {
	voice                                         speechsynth.Voice
	script                                        string
	summary, intent, sentiment, urgency, callback string
}

// DemoScript is what the caller says in one of the demo's recorded calls, in which voice, and
// the callback number it reads out (E.164).
type DemoScript struct {
	Voice    speechsynth.Voice
	Script   string
	Callback string
}

// DemoScripts are the callers' scripts the demo's recordings are spoken from.
func DemoScripts() []DemoScript {
	out := make([]DemoScript, len(demoStories))
	for i, st := range demoStories {
		out[i] = DemoScript{Voice: st.voice, Script: st.script, Callback: st.callback}
	}
	return out
}

// The agent who answers the demo's calls: Festival's male diphone voice, so the two sides
// sound different (Debian has one English HTS voice, the callers'); espeak-ng without it.
var (
	demoAgentVoice = speechsynth.Voice{Festival: speechsynth.FestivalDiphoneMale, Name: "en-us+edward", WordsPerMinute: 140}
	demoGreeting   = "Good morning, Acme Plumbing, Sam speaking. How can I help?"
	demoGoodbye    = "Thank you. We will call you back shortly. Goodbye."
)

// DemoPause is the silence before each turn of a demo call, in seconds.
const DemoPause = 0.6

// DemoCallTurns are what is said in an answered demo call: the agent's greeting, the
// caller's script and the agent's goodbye.
func DemoCallTurns(d DemoScript) []speechsynth.Turn {
	return []speechsynth.Turn{{Agent: true, Voice: demoAgentVoice, Text: demoGreeting}, {Voice: d.Voice, Text: d.Script},
		{Agent: true, Voice: demoAgentVoice, Text: demoGoodbye}}
}

// demoTurn is one side's words in a demo recording and where they are in it.
type demoTurn struct {
	speaker    string // caller or agent, as transcripts name them
	text       string
	start, end float64
}

// demoAudio is one recording of a story and what is said in it.
type demoAudio struct {
	audio   []byte
	seconds int
	turns   []demoTurn
}

// demoRecording is a story's audio: answered, a two-channel call with the agent (the caller on
// the first channel); left as a voicemail, the caller alone.
type demoRecording struct {
	story           demoStory
	call, voicemail demoAudio
}

// demoRecordings speaks each story at telephone quality (8 kHz mu-law WAV), with Festival's
// voices where installed and espeak-ng otherwise. Without espeak-ng and sox each is a tone as
// long as its script would take, so the demo still plays something.
func demoRecordings(ctx context.Context, say func(string, ...any)) ([]demoRecording, error) {
	out := make([]demoRecording, len(demoStories))
	spoken := speechsynth.Available()
	switch {
	case !spoken:
		say("espeak-ng or sox is not installed (hack/install-speech-tools.sh): demo recordings are tones, not speech")
	case !speechsynth.UsesFestival(demoStories[0].voice) || !speechsynth.UsesFestival(demoAgentVoice):
		say("festival or its voices (festvox-us-slt-hts, festvox-kallpc16k) are not installed (hack/install-speech-tools.sh): " +
			"demo recordings are spoken by espeak-ng, which speech-to-text engines read far worse")
	}
	for i, st := range demoStories {
		out[i].story = st
		if !spoken {
			secs := len(strings.Fields(st.script)) * 60 / max(st.voice.WordsPerMinute, 100)
			tone := demoAudio{audio: ToneWAV(secs), seconds: secs, turns: []demoTurn{{speaker: "caller", text: st.script, end: float64(secs)}}}
			out[i].call, out[i].voicemail = tone, tone
			continue
		}
		var err error
		out[i].call, err = speakDemo(ctx, DemoCallTurns(DemoScript{Voice: st.voice, Script: st.script}))
		if err == nil {
			out[i].voicemail, err = speakDemo(ctx, []speechsynth.Turn{{Voice: st.voice, Text: st.script}})
		}
		if err != nil {
			return nil, fmt.Errorf("speak demo recording %d: %w", i, err)
		}
	}
	return out, nil
}

func speakDemo(ctx context.Context, turns []speechsynth.Turn) (demoAudio, error) {
	audio, spans, err := speechsynth.Conversation(ctx, turns, DemoPause)
	if err != nil {
		return demoAudio{}, err
	}
	secs, err := speechsynth.Seconds(audio)
	if err != nil {
		return demoAudio{}, err
	}
	d := demoAudio{audio: audio, seconds: int(math.Round(secs))}
	for i, t := range turns {
		speaker := "caller"
		if t.Agent {
			speaker = "agent"
		}
		d.turns = append(d.turns, demoTurn{speaker: speaker, text: t.Text, start: spans[i].Start, end: spans[i].End})
	}
	return d, nil
}

// demo data: a plumbing firm in London.
var (
	demoCallers = []struct{ name, e164 string }{
		{"Priya Shah", "+447700900101"}, {"Tom Baker", "+447700900102"}, {"", "+447700900103"},
		{"Grace Okafor", "+441632960104"}, {"", "+447700900105"}, {"Ahmed Khan", "+447700900106"},
		{"Lucy Evans", "+447700900107"}, {"", "+33612345678"},
	}
	// demoStories are what the callers say in the demo's recorded calls: each recording is its
	// script spoken at telephone quality by Festival's HTS voice (espeak-ng without Festival),
	// and its seeded transcript and summary tell the same story. Callback numbers are Ofcom's
	// drama landlines (valid numbers no one answers), read digit by digit with 0 as "zero" or
	// "oh", as callers say it.
	demoStories = []demoStory{
		{voice: demoCallerVoice("en-gb", 150),
			script: "Hello, this is Priya Shah. I'm calling about a leaking radiator valve in my front room. It has been dripping " +
				"since the weekend. Could someone come and repair it this week? Please call me back on zero one one three, " +
				"four nine six, zero four five six. Thank you.",
			summary: "Caller reports a leaking radiator valve and wants a visit this week.", intent: "repair_request",
			sentiment: "neutral", urgency: "high", callback: "+441134960456"},
		{voice: demoCallerVoice("en-us+edward", 140),
			script: "Hi, it's Tom Baker on Station Road. The boiler stopped working this morning and there is no hot water. " +
				"My mother is elderly and at home all day, so it is urgent. Please send an engineer today. " +
				"You can reach me on zero one six one, four nine six, zero seven eight nine.",
			summary: "Boiler has no hot water since this morning; elderly resident at home.", intent: "repair_request",
			sentiment: "neutral", urgency: "high", callback: "+441614960789"},
		{voice: demoCallerVoice("en-us", 150),
			script: "Good afternoon. I would like a quote to replace the bathroom suite in my flat, the bath, the basin and the toilet. " +
				"There is no rush, next month would be fine. Please call me on zero two zero, seven nine four six, zero zero one eight.",
			summary: "Asked for a quote to replace a bathroom suite.", intent: "request_quote",
			sentiment: "neutral", urgency: "low", callback: "+442079460018"},
		{voice: demoCallerVoice("en-us+edward", 140),
			script: "Hello, I'm calling about an invoice you sent last month for the kitchen tap. I think I was charged twice. " +
				"Could you check the payment and get back to me on zero one one seven, four nine six, zero three two one?",
			summary: "Chasing an invoice sent last month; thinks they were charged twice.", intent: "billing_query",
			sentiment: "neutral", urgency: "normal", callback: "+441174960321"},
		{voice: demoCallerVoice("en-us+edward", 140),
			script: "Hi, just a quick message to say thank you to the engineer who came yesterday. He was brilliant and the " +
				"shower works perfectly now. If you need a review, call me on oh one two one, four nine six, oh six five four.",
			summary: "Thanked the engineer for yesterday's work on the shower.", intent: "general_enquiry",
			sentiment: "positive", urgency: "normal", callback: "+441214960654"},
	}
	dispositions = []string{"answered", "answered", "answered", "voicemail", "no-answer", "answered", "busy", "answered", "failed"}
)

// Store is what the demo account is written to: every domain it seeds, and the numbers
// service's share.
type Store interface {
	numbers.Store
	store.Users
	store.Keys
	store.Contacts
	store.Billing
	store.Calls
	store.Recordings
	store.Messages
	store.Inbox
}

// Demo creates the demo account: Business plan with the Integrations add-on, an owner and a
// member with keys, two numbers, contacts, a month of calls (some recorded and transcribed), a
// text thread, to-dos, notifications, a message slip, a job request, a blocked caller and a
// topped-up balance.
func Demo(ctx context.Context, st Store, o DemoOptions) (DemoAccount, error) {
	d := newDemo(st, o)
	if err := d.createAccount(ctx); err != nil {
		return DemoAccount{}, err
	}
	if err := d.addNumbers(ctx); err != nil {
		return DemoAccount{}, err
	}
	if err := d.addContacts(ctx); err != nil {
		return DemoAccount{}, err
	}
	if err := d.addCallHistory(ctx); err != nil {
		return DemoAccount{}, err
	}
	if err := d.addInbox(ctx); err != nil {
		return DemoAccount{}, err
	}
	return d.out, nil
}

// demo is the demo account as Demo builds it, step by step.
type demo struct {
	st  Store
	o   DemoOptions
	now time.Time
	rng *rand.Rand

	out           DemoAccount
	acct          store.Account
	owner, member store.User
	main          store.PlatformNumber
	lines         []store.PlatformNumber // the main and emergency lines, which calls alternate
}

func newDemo(st Store, o DemoOptions) *demo {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Calls == 0 {
		o.Calls = DefaultDemoCalls
	}
	return &demo{st: st, o: o, now: o.Clock.Now().UTC().Truncate(time.Second), rng: rand.New(rand.NewPCG(7, 11))}
}

// say writes one line of progress.
func (d *demo) say(format string, args ...any) {
	if d.o.Progress != nil {
		fmt.Fprintf(d.o.Progress, "    "+format+"\n", args...)
	}
}

// createAccount creates the account, its owner and a member, and a key for each.
func (d *demo) createAccount(ctx context.Context) error {
	acct, err := d.st.CreateAccount(ctx, store.NewAccount{Name: "Acme Plumbing Ltd", Plan: plans.Business,
		Addons: []string{plans.AddonIntegrations}, TimeZone: "Europe/London"})
	if err != nil {
		return fmt.Errorf("create the demo account: %w", err)
	}
	d.acct = acct
	d.out = DemoAccount{AccountID: acct.ID, AccountPublicID: acct.PublicID, OwnerEmail: fmt.Sprintf("owner+%s@acme-plumbing.example", acct.PublicID)}
	if d.owner, err = d.st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Alex Acme", Email: d.out.OwnerEmail, Role: "owner",
		CanManageAPIKeys: true, CanTranscribe: true}); err != nil {
		return fmt.Errorf("create the demo owner: %w", err)
	}
	if d.member, err = d.st.CreateUser(ctx, store.NewUser{AccountID: acct.ID, Name: "Sam Support",
		Email: fmt.Sprintf("sam+%s@acme-plumbing.example", acct.PublicID), Role: "member", CanManageAPIKeys: true}); err != nil {
		return fmt.Errorf("create the demo member: %w", err)
	}
	ownerKey, err := d.st.CreateAPIKey(ctx, d.owner.ID, "demo owner key", auth.Abilities(auth.AllAbilities))
	if err != nil {
		return fmt.Errorf("create the demo key: %w", err)
	}
	memberKey, err := d.st.CreateAPIKey(ctx, d.member.ID, "demo read-only key", auth.Abilities{auth.Read})
	if err != nil {
		return fmt.Errorf("create the member key: %w", err)
	}
	d.out.OwnerKey, d.out.MemberKey = ownerKey.Token, memberKey.Token
	d.say("account %s (%s), owner %s", acct.Name, acct.PublicID, d.out.OwnerEmail)
	return nil
}

// addNumbers adds the main line (office hours, then voicemail) and the emergency line, as the
// platform adds numbers: through the numbers service.
func (d *demo) addNumbers(ctx context.Context) error {
	weekdays := []numbers.Window{{Days: []int{1, 2, 3, 4, 5}, Start: "08:00", End: "18:00"}}
	office := numbers.Route{Mode: "forward", RecordingEnabled: true, VoicemailFallback: true, AICover: "off",
		ForwardTargets: []numbers.ForwardTarget{{Kind: "staff", E164: "+447700900900", StaffLabel: "Office", RingSeconds: 20}}}
	afterHours := numbers.Route{Mode: "voicemail", RecordingEnabled: true, AICover: "off"}
	service := numbers.New(d.st, d.o.Clock)
	yes := true
	var err error
	d.main, err = service.Provision(ctx, numbers.Provision{Account: d.acct.PublicID, Number: "+442079460000", Settings: numbers.Settings{
		Label: ptr("Main line"), BusinessProfile: ptr("Acme Plumbing"), SMSCapable: &yes, SMSReady: &yes, CLIEligible: &yes,
		CLIVerified: &yes, IsDefaultCallerID: &yes, VoicemailTranscriptionEnabled: &yes, CallTranscriptionEnabled: &yes}})
	if err == nil {
		_, err = service.SetRouting(ctx, d.main.E164, numbers.Routing{Default: &afterHours,
			Schedules: []numbers.ScheduledRoute{{Name: "Office hours", Windows: weekdays, Route: office}}})
	}
	if err != nil {
		return fmt.Errorf("create the main number: %w", err)
	}
	emergency, err := service.Provision(ctx, numbers.Provision{Account: d.acct.PublicID, Number: "+441614960000",
		Settings: numbers.Settings{Label: ptr("Emergency line")}})
	if err == nil {
		_, err = service.SetRouting(ctx, emergency.E164, numbers.Routing{Default: &office})
	}
	if err != nil {
		return fmt.Errorf("create the emergency number: %w", err)
	}
	d.lines = []store.PlatformNumber{d.main, emergency}
	d.say("numbers %s and %s", d.main.E164, emergency.E164)
	return nil
}

// addContacts puts the named demo callers in the directory, as a CRM sync would.
func (d *demo) addContacts(ctx context.Context) error {
	for i, c := range demoCallers {
		if c.name == "" {
			continue
		}
		ext := fmt.Sprintf("crm-%03d", i+1)
		if _, err := d.st.UpsertContact(ctx, d.acct.ID, store.ContactInput{Source: "hubspot", ExternalID: &ext, DisplayName: c.name,
			Phones: []store.ContactPhoneInput{{Number: c.e164, Label: "mobile"}}}, d.now, nil); err != nil {
			return fmt.Errorf("create contact %s: %w", c.name, err)
		}
	}
	d.say("%d contacts", len(demoCallers)-3)
	return nil
}

// demoTopUp is one top-up of the demo's balance.
type demoTopUp struct {
	pence int64
	at    time.Time
}

// addCallHistory makes the calls, oldest first, with the top-ups in between, so every ledger
// entry's balance_after_pence follows from the one before it.
func (d *demo) addCallHistory(ctx context.Context) error {
	recordings, err := demoRecordings(ctx, d.say)
	if err != nil {
		return err
	}
	starts := d.callStarts()
	topUps := []demoTopUp{{2000, d.now.Add(-88 * 24 * time.Hour)}, {2500, d.now.Add(-20 * 24 * time.Hour)}}
	topUpDue := func(before time.Time) error {
		for len(topUps) > 0 && topUps[0].at.Before(before) {
			if _, err := d.st.TopUp(ctx, d.acct.ID, topUps[0].pence, topUps[0].at); err != nil {
				return fmt.Errorf("top up: %w", err)
			}
			topUps = topUps[1:]
		}
		return nil
	}
	recorded := 0
	for i := range d.o.Calls {
		if i > 0 && i%100 == 0 {
			d.say("%d of %d calls", i, d.o.Calls)
		}
		if err := topUpDue(starts[i]); err != nil {
			return err
		}
		wasRecorded, err := d.addCall(ctx, i, starts[i], recordings)
		if err != nil {
			return err
		}
		if wasRecorded {
			recorded++
		}
	}
	if err := topUpDue(d.now.Add(time.Second)); err != nil {
		return err
	}
	d.say("%d calls, %d recorded", d.o.Calls, recorded)
	return nil
}

// callStarts spreads the calls over demoHistory, oldest first, with a few calls today.
func (d *demo) callStarts() []time.Time {
	starts := make([]time.Time, d.o.Calls)
	for i := range starts {
		starts[i] = d.now.Add(-time.Duration(d.rng.Int64N(int64(demoHistory)))).Truncate(time.Second)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range min(3, len(starts)) {
		starts[len(starts)-1-i] = d.now.Add(-time.Duration(i+1) * 17 * time.Minute)
	}
	return starts
}

// addCall makes the i-th call; an answered call or voicemail gets a recording (reported in
// recorded), and two in three of those a transcript.
func (d *demo) addCall(ctx context.Context, i int, started time.Time, recordings []demoRecording) (recorded bool, err error) {
	caller := demoCallers[d.rng.IntN(len(demoCallers))]
	num := d.lines[i%len(d.lines)]
	disposition := dispositions[d.rng.IntN(len(dispositions))]
	// A call with a recording lasts as long as its recording plus the ringing before it.
	rec := recordings[d.rng.IntN(len(recordings))]
	heard := rec.call
	if disposition == "voicemail" {
		heard = rec.voicemail
	}
	duration, talk := 0, 0
	if disposition == "answered" || disposition == "voicemail" {
		talk = heard.seconds
		duration = talk + 5 + d.rng.IntN(15)
	}
	filtered := i%13 == 12
	callID, _, err := d.st.CreateCall(ctx, store.NewCall{AccountID: d.acct.ID, NumberID: &num.ID, FromE164: caller.e164,
		ToE164: num.E164, CallerName: caller.name, Disposition: disposition, Filtered: filtered, StartedAt: started,
		DurationSeconds: duration, TalkSeconds: talk, ForwardSeconds: min(talk, 300), RatedPence: int64(duration/60) * 3})
	if err != nil {
		return false, fmt.Errorf("create a call: %w", err)
	}
	if filtered || (disposition != "answered" && disposition != "voicemail") {
		return false, nil
	}
	kind := "call"
	if disposition == "voicemail" {
		kind = "voicemail"
	}
	ended := started.Add(time.Duration(duration) * time.Second)
	recording, err := d.st.CreateRecording(ctx, store.NewRecording{AccountID: d.acct.ID, CallID: &callID, Kind: kind,
		StorageKey: fmt.Sprintf("%s/%d.wav", d.acct.PublicID, callID), DurationSeconds: heard.seconds,
		SizeBytes: int64(len(heard.audio)), CreatedAt: ended})
	if err != nil {
		return false, fmt.Errorf("create a recording: %w", err)
	}
	if d.o.Recordings != nil {
		if err := d.o.Recordings.Put(ctx, recording.StorageKey, bytes.NewReader(heard.audio)); err != nil {
			return false, fmt.Errorf("store demo audio: %w", err)
		}
	}
	if i%3 == 0 {
		return true, nil // left untranscribed, so it can be transcribed through the API
	}
	return true, d.transcribe(ctx, callID, recording.ID, rec.story, heard, started, duration)
}

// transcribe charges a recorded call's transcription to the balance (skipped when the balance
// cannot cover it) and stores its transcript: the story's summary and the audio's turns.
func (d *demo) transcribe(ctx context.Context, callID, recordingID int64, s demoStory, heard demoAudio, started time.Time, duration int) error {
	minutes := (heard.seconds + 59) / 60
	if err := d.st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.ApplyLedgerEntry(ctx, d.acct.ID, store.LedgerCharge, -int64(minutes*5),
			fmt.Sprintf("Transcription, %d min", minutes), "", started.Add(time.Duration(duration)*time.Second))
		return err
	}); err != nil && !errors.Is(err, store.ErrInsufficientBalance) {
		return fmt.Errorf("charge a transcription: %w", err)
	}
	callback := s.callback
	segments := make([]store.TranscriptSegment, len(heard.turns))
	texts := make([]string, len(heard.turns))
	for i, t := range heard.turns {
		segments[i] = store.TranscriptSegment{StartSeconds: t.start, EndSeconds: t.end, Speaker: t.speaker, Text: t.text}
		texts[i] = t.text
	}
	_, err := d.st.CreateCompletedTranscript(ctx, store.NewTranscript{AccountID: d.acct.ID, RecordingID: recordingID, CallID: &callID,
		Text: strings.Join(texts, " "), Language: "en-GB", Minutes: minutes, RatedPence: int64(minutes * 5),
		Summary: &s.summary, Intent: &s.intent, Sentiment: &s.sentiment, Urgency: &s.urgency,
		ActionItems: []string{"Call back " + callback}, CallbackNumber: &callback,
		Segments:    segments,
		CompletedAt: started.Add(time.Duration(duration+90) * time.Second)})
	if err != nil {
		return fmt.Errorf("create a transcript: %w", err)
	}
	return nil
}

// addInbox adds a text thread, to-dos, notifications for both users, a message slip, a job
// request and a blocked caller.
func (d *demo) addInbox(ctx context.Context) error {
	for i, body := range []string{"Hi, is anyone free to look at a dripping tap tomorrow?", "Yes, we can come at 10am.", "Perfect, thanks!"} {
		dir := "inbound"
		if i == 1 {
			dir = "outbound"
		}
		if _, err := d.st.AddSMSMessage(ctx, store.NewSMSMessage{AccountID: d.acct.ID, NumberID: d.main.ID,
			CounterpartyE164: demoCallers[0].e164, Direction: dir, Body: body,
			ReceivedAt: d.now.Add(-time.Duration(3-i) * time.Hour)}); err != nil {
			return fmt.Errorf("create a text: %w", err)
		}
	}
	callback := demoCallers[1].e164
	high, snippet := "high", "Boiler has no hot water since this morning"
	if _, err := d.st.CreateTask(ctx, store.NewTask{AccountID: d.acct.ID, Text: "Call Tom back about the boiler", CallbackE164: &callback,
		Urgency: &high, SummarySnippet: &snippet, CreatedAt: d.now.Add(-2 * time.Hour)}); err != nil {
		return fmt.Errorf("create a to-do: %w", err)
	}
	if _, err := d.st.CreateTask(ctx, store.NewTask{AccountID: d.acct.ID, Text: "Order a replacement radiator valve", CreatedAt: d.now.Add(-26 * time.Hour)}); err != nil {
		return fmt.Errorf("create a to-do: %w", err)
	}
	for _, u := range []int64{d.owner.ID, d.member.ID} {
		if _, err := d.st.CreateNotification(ctx, store.NewNotification{AccountID: d.acct.ID, UserID: u, Type: "voicemail",
			Title: "New voicemail", Body: "Tom Baker left a 1 minute voicemail", URL: "/calls", CreatedAt: d.now.Add(-90 * time.Minute)}); err != nil {
			return fmt.Errorf("create a notification: %w", err)
		}
	}
	if _, err := d.st.CreateMessageSlip(ctx, store.NewMessageSlip{AccountID: d.acct.ID, NumberID: &d.main.ID, FromE164: demoCallers[3].e164,
		Department: "Sales", CallerName: demoCallers[3].name, ReceivedAt: d.now.Add(-5 * time.Hour), NameRecording: true, MessageRecording: true}); err != nil {
		return fmt.Errorf("create a message slip: %w", err)
	}
	address, postcode, when := "12 Mill Lane, London", "E1 6AN", "morning"
	if _, err := d.st.CreateJobRequest(ctx, store.NewJobRequest{AccountID: d.acct.ID, NumberID: &d.main.ID, CallerName: demoCallers[5].name,
		CallerE164: demoCallers[5].e164, JobType: "Leak repair", Description: "Water coming through the kitchen ceiling",
		Address: &address, Postcode: &postcode, PreferredWhen: &when, CreatedAt: d.now.Add(-4 * time.Hour)}); err != nil {
		return fmt.Errorf("create a job request: %w", err)
	}
	if _, err := d.st.CreateBlockedCaller(ctx, store.NewBlockedCaller{AccountID: d.acct.ID, E164: "+447700900666", Action: "reject",
		Label: "Cold caller", CreatedAt: d.now.Add(-72 * time.Hour)}); err != nil {
		return fmt.Errorf("create a blocked caller: %w", err)
	}
	d.say("a text thread, to-dos, notifications, a message slip, a job request and a blocked caller")
	return nil
}

// ToneWAV is seconds of a quiet 440 Hz tone as 8 kHz 16-bit mono PCM WAV, so the demo's
// stream links play something real.
func ToneWAV(seconds int) []byte {
	const rate = 8000
	samples := rate * seconds
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + samples*2))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(rate))
	w(uint32(rate * 2))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(samples * 2))
	for i := range samples {
		w(int16(3000 * math.Sin(2*math.Pi*440*float64(i)/rate)))
	}
	return b.Bytes()
}

func ptr[T any](v T) *T { return &v }

// demoCallerVoice is Festival's HTS voice, with the espeak-ng voice and rate used without it.
func demoCallerVoice(espeak string, wpm int) speechsynth.Voice {
	return speechsynth.Voice{Festival: speechsynth.FestivalHTSFemale, Name: espeak, WordsPerMinute: wpm}
}
