package transcription

import (
	"context"
	"regexp"
	"strings"
	"unicode"
)

// BuiltinSummarizer makes summaries without a network or a model: the first sentences as the
// gist, the intent, urgency and sentiment from word lists, action items from the caller's
// requests, and the callback number (written or read aloud, see FindCallbackNumber; national
// numbers read as UK numbers; nil when the caller says none). It is the default; a model does
// better.
type BuiltinSummarizer struct{}

// Summarize extracts the summary fields from the transcript.
func (BuiltinSummarizer) Summarize(_ context.Context, in SummaryInput) (Summary, error) {
	return Normalize(extract(in)), nil
}

func emptySummary() Summary {
	return Summary{Summary: "No speech was recognised in the recording.", Intent: "no_speech", Sentiment: "neutral", Urgency: "normal",
		ActionItems: []string{}}
}

// Word lists (lower case; phrases match on word boundaries).
var (
	highUrgency = []string{"urgent", "urgently", "emergency", "asap", "as soon as possible", "immediately", "right away",
		"straight away", "today", "tonight", "leak", "leaking", "flooding", "flooded", "burst", "no heating", "no hot water",
		"no power", "dangerous", "smell of gas", "locked out", "critical"}
	lowUrgency = []string{"no rush", "no hurry", "not urgent", "whenever", "when you get a chance", "when you have a moment",
		"next week", "next month", "at some point", "just letting you know", "for your information", "no need to call back"}
	positiveWords = []string{"thank", "thanks", "thank you", "great", "happy", "pleased", "brilliant", "lovely", "perfect",
		"excellent", "appreciate", "wonderful", "fantastic", "delighted", "glad", "good job", "well done"}
	negativeWords = []string{"complain", "complaint", "unhappy", "angry", "disappointed", "terrible", "awful", "problem",
		"broken", "frustrated", "frustrating", "cancel", "refund", "wrong", "not working", "doesn't work", "still waiting",
		"unacceptable", "upset", "annoyed", "rubbish", "poor", "worst", "fault", "faulty"}
	// requestPhrases start or mark a request the staff should act on.
	requestPhrases = []string{"please", "could you", "can you", "would you", "i need", "we need", "i'd like", "i would like",
		"we'd like", "we would like", "i want", "i'm looking for", "i am looking for", "send me", "let me know", "get back to me"}
	callbackPhrases = []string{"call me back", "call back", "ring me", "ring back", "give me a call", "give me a ring",
		"call me on", "reach me on", "contact me", "get back to me"}
	// intents are the topics of a message, in order of precedence: the first whose words occur
	// names it. A request to be called back is asked in nearly every message, so it names the
	// intent only when no topic does (callbackOnly).
	intents = []struct {
		intent string
		words  []string
	}{
		{"complaint", []string{"complain", "complaint", "unacceptable", "not happy", "unhappy with"}},
		{"cancellation", []string{"cancel", "cancellation"}},
		{"repair_request", []string{"broken", "repair", "fix", "leak", "leaking", "not working", "stopped working", "fault", "faulty",
			"burst", "failed", "no power", "no heating", "no hot water", "blocked", "frozen", "dripping", "cracked", "noise",
			"smell of gas", "won't stop", "keeps running", "send someone", "send an engineer", "come and look"}},
		{"book_appointment", []string{"book", "booking", "appointment", "schedule", "reschedule", "availability", "arrange"}},
		{"request_quote", []string{"quote", "estimate", "how much", "price", "pricing", "cost"}},
		{"billing_query", []string{"invoice", "bill", "payment", "paid", "pay", "receipt", "charge", "charged", "refund"}},
		{"delivery_query", []string{"delivery", "deliver", "order", "parcel", "tracking"}},
	}
	// noCallback are the ways a caller says they need no call back.
	noCallback = []string{"no need to call back", "no need to call me back", "don't call back", "no need to ring back"}
)

// messageIntent is the intent of a message (lower case, padded with spaces): its first topic
// by precedence; else a call back when one is asked for and not declined; else a general
// enquiry.
func messageIntent(lower string) string {
	for _, it := range intents {
		if containsAny(lower, it.words) {
			return it.intent
		}
	}
	if containsAny(lower, callbackPhrases) && !containsAny(lower, noCallback) {
		return "callback_request"
	}
	return "general_enquiry"
}

var sentenceEnd = regexp.MustCompile(`[^.!?]+[.!?]*`)

func extract(in SummaryInput) Summary {
	text := strings.TrimSpace(in.Text)
	if text == "" {
		return emptySummary()
	}
	lower := " " + normalizeSpace(strings.ToLower(text)) + " "
	s := Summary{Intent: messageIntent(lower), Sentiment: "neutral", Urgency: "normal"}
	switch {
	case containsAny(lower, lowUrgency) && !containsAny(lower, []string{"urgent ", "emergency"}):
		s.Urgency = "low"
	case containsAny(lower, highUrgency):
		s.Urgency = "high"
	}
	score := countAny(lower, positiveWords) - countAny(lower, negativeWords)
	switch {
	case score > 0:
		s.Sentiment = "positive"
	case score < 0:
		s.Sentiment = "negative"
	}

	sentences := splitSentences(text)
	var gist []string
	for _, sn := range sentences {
		if len(strings.Join(gist, " "))+len(sn) > 280 && len(gist) > 0 {
			break
		}
		gist = append(gist, sn)
		if len(gist) == 2 {
			break
		}
	}
	s.Summary = strings.Join(gist, " ")
	if r := []rune(s.Summary); len(r) > 300 {
		s.Summary = string(r[:299]) + "…"
	}

	// Only a number the caller said: the caller's own is the call's from_e164 already, and a
	// copy of it here could not be told from a number heard.
	if n := FindCallbackNumber(text); n != "" {
		s.CallbackNumber = &n
	}

	wantsCallback := containsAny(lower, callbackPhrases)
	if wantsCallback {
		item := "Call back the caller"
		if s.CallbackNumber != nil {
			item += " on " + *s.CallbackNumber
		}
		s.ActionItems = append(s.ActionItems, item)
	}
	for _, sn := range sentences {
		l := " " + normalizeSpace(strings.ToLower(sn)) + " "
		if !containsAny(l, requestPhrases) || (wantsCallback && containsAny(l, callbackPhrases) && !hasOtherRequest(l)) {
			continue
		}
		s.ActionItems = append(s.ActionItems, "Follow up: "+strings.TrimRight(sn, " .!?"))
	}
	return s
}

// hasOtherRequest reports whether a sentence asking for a callback also asks for something else.
func hasOtherRequest(l string) bool {
	return containsAny(l, []string{" and send", " and book", " and let me know", " quote", " invoice", " book "})
}

func splitSentences(text string) []string {
	var out []string
	for _, m := range sentenceEnd.FindAllString(text, -1) {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// containsAny reports whether padded (" text ") holds any phrase on word boundaries.
func containsAny(padded string, phrases []string) bool { return countAny(padded, phrases) > 0 }

func countAny(padded string, phrases []string) int {
	words := wordsOnly(padded)
	n := 0
	for _, p := range phrases {
		if strings.Contains(words, " "+p+" ") || strings.Contains(words, " "+p+"s ") {
			n++
		}
	}
	return n
}

// wordsOnly keeps letters, digits and apostrophes, so phrases match across punctuation.
func wordsOnly(s string) string {
	var b strings.Builder
	b.WriteByte(' ')
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteByte(' ')
	return " " + normalizeSpace(b.String()) + " "
}
