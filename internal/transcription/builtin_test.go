package transcription

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestBuiltinSummarizer(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		in   SummaryInput
		want Summary
	}{
		{"urgent repair with a spoken callback number",
			SummaryInput{Text: "Hi, it's Sam. My boiler is broken and there's no hot water. Please call me back on oh one six one, four nine six, oh double five five as soon as possible.", CallerE164: "+447400123456"},
			Summary{Summary: "Hi, it's Sam. My boiler is broken and there's no hot water.", Intent: "repair_request", Sentiment: "negative",
				Urgency: "high", ActionItems: []string{"Call back the caller on +441614960555"}, CallbackNumber: str("+441614960555")}},
		{"callback asked for, no number said: none, not the caller's own",
			SummaryInput{Text: "My boiler is broken. Please call me back.", CallerE164: "+447400123456"},
			Summary{Summary: "My boiler is broken. Please call me back.", Intent: "repair_request", Sentiment: "negative",
				Urgency: "normal", ActionItems: []string{"Call back the caller"}}},
		{"a number one digit short is no number",
			SummaryInput{Text: "Call me back on oh seven nine five six three oh oh seven one.", CallerE164: "+447400123456"},
			Summary{Summary: "Call me back on oh seven nine five six three oh oh seven one.", Intent: "callback_request", Sentiment: "neutral",
				Urgency: "normal", ActionItems: []string{"Call back the caller"}}},
		{"friendly quote request, no rush, written number",
			SummaryInput{Text: "Thanks for the great job last time. Could you send me a quote for a new kitchen tap? No rush. My number is 020 7946 0018.", CallerE164: "+447400123456"},
			Summary{Summary: "Thanks for the great job last time. Could you send me a quote for a new kitchen tap?", Intent: "request_quote",
				Sentiment: "positive", Urgency: "low", ActionItems: []string{"Follow up: Could you send me a quote for a new kitchen tap"},
				CallbackNumber: str("+442079460018")}},
		{"plain message, no number said",
			SummaryInput{Text: "Just to say the parcel arrived", CallerE164: "+447400123456"},
			Summary{Summary: "Just to say the parcel arrived", Intent: "delivery_query", Sentiment: "neutral", Urgency: "normal",
				ActionItems: []string{}}},
		{"complaint",
			SummaryInput{Text: "I want to complain. The engineer never turned up and I'm very disappointed. I would like a refund.", CallerE164: "anonymous"},
			Summary{Summary: "I want to complain. The engineer never turned up and I'm very disappointed.", Intent: "complaint", Sentiment: "negative",
				Urgency: "normal", ActionItems: []string{"Follow up: I want to complain", "Follow up: I would like a refund"}}},
		{"no speech",
			SummaryInput{Text: "  ", CallerE164: "+447400123456"},
			Summary{Summary: "No speech was recognised in the recording.", Intent: "no_speech", Sentiment: "neutral", Urgency: "normal",
				ActionItems: []string{}}},
		{"numbers that are not phone numbers are ignored",
			SummaryInput{Text: "Order 12345678 for two items. Can you book one visit?"},
			Summary{Summary: "Order 12345678 for two items. Can you book one visit?", Intent: "book_appointment", Sentiment: "neutral",
				Urgency: "normal", ActionItems: []string{"Follow up: Can you book one visit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuiltinSummarizer{}.Summarize(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v (callback %v)\nwant %+v (callback %v)", got, deref(got.CallbackNumber), tt.want, deref(tt.want.CallbackNumber))
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestFindCallbackNumber(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"written mobile", "call me on 07400 123456 please", "+447400123456"},
		{"international with the trunk 0 in brackets", "ring +44 (0)20 7946 0018", "+442079460018"},
		{"international, not UK", "my number is +1 415 555 2671", "+14155552671"},
		{"written with hyphens", "it's 020-7946-0018", "+442079460018"},
		{"spoken, oh for zero", "oh two oh seven nine four six oh oh one eight", "+442079460018"},
		{"spoken with double and commas", "Please call me back on oh seven four double oh, one two three, four five six.", "+447400123456"},
		{"spoken with zero", "zero two zero seven nine four six, zero zero one eight", "+442079460018"},
		{"spoken with nought and triple", "nought one six one, four nine six, nought triple five", "+441614960555"},
		{"double before a written digit", "oh one six one four nine six double 0 one two", "+441614960012"},
		{"words and digits mixed", "07400 one two three four five six", "+447400123456"},
		{"digits then words", "oh one six one 496 oh double five five", "+441614960555"},
		{"filler between the groups", "oh one six one, that's four nine six, and oh double five five", "+441614960555"},
		{"filler on between the groups", "my number is oh one one three on four nine six oh oh three three", "+441134960033"},
		{"eight hundred", "freephone oh eight hundred, one two three four five six seven", "+448001234567"},
		{"plus four four", "plus four four one six one four nine six oh five five five", "+441614960555"},
		{"other digits before the number", "i have one two three things so oh one six one four nine six oh five five five", "+441614960555"},
		{"a second number is not the first", "07400 123456 or 020 7946 0018, whichever is best", "+447400123456"},
		{"engine output without punctuation", "please call me back on oh one six one four nine six oh five five five thank you", "+441614960555"},
		{"upper case", "Oh One Six One Four Nine Six Oh Five Five Five", "+441614960555"},

		// What a recognizer writes for digits it hears.
		{"to for two", "oh one one three four nine six oh oh to one", "+441134960021"},
		{"too for two", "oh one one three four nine six oh oh too one", "+441134960021"},
		{"for for four", "oh one six one for nine six oh five five five", "+441614960555"},
		{"to and for together", "oh one one three for nine six oh oh to one", "+441134960021"},
		{"so for oh", "a one to one for nine six so nine three seven", "+441214960937"},
		{"or for oh", "of two zero seven nine for six or seven one five", "+442079460715"},
		{"a for the leading oh", "call me on a one six one four nine six oh five five five", "+441614960555"},
		{"know for the leading oh", "know one six one four nine six oh five five five", "+441614960555"},
		{"of for the leading oh", "it's of one six one four nine six oh five five five", "+441614960555"},

		{"too few digits", "one two three", ""},
		{"a time", "come at seven o'clock, or at half past nine", ""},
		{"a few things", "one or two things, maybe three or four", ""},
		{"a year in words", "it was fitted in two thousand and nineteen", ""},
		{"a year in digits", "since 2019, and again in 2023", ""},
		{"a year read out", "the boiler is from twenty oh nine", ""},
		{"an order number", "order number four five two one", ""},
		{"written numbers that are not phone numbers", "invoice 1234 5678", ""},
		{"a sentence end splits a number", "call oh one six one. four nine six oh five five five", ""},
		{"another word splits a number", "oh one six one bye four nine six oh five five five", ""},
		{"too many fillers split a number", "oh one six one and then um four nine six oh five five five", ""},
		{"double oh oh is not a country code", "double oh four five six seven eight nine one two three four", ""},
		{"no number here", "no number here", ""},
		{"empty", "", ""},

		// Valid numbers only: a number of a possible length in no allocated range is not returned.
		{"one digit short", "call me back on oh seven nine five six three oh oh seven one", ""},
		{"one digit short, written", "call me back on 0795 630071", ""},
		{"a range never allocated (drama mobiles)", "call me on 07700 900456", ""},
		{"an international number one digit short", "plus four four one six one four nine six oh five five", ""},

		// Homophones in ordinary sentences are words.
		{"lunch at two", "I need to go for lunch at two", ""},
		{"to and for among digits that are no number", "I need two to four engineers for six days", ""},
		{"a before a digit", "I have a seven year old boiler and a two bed flat", ""},
		{"of before a digit", "one of two radiators, four of five taps", ""},
		{"for after a digit, then a word", "it costs nine for lunch and seven to go", ""},
		{"nine to five", "I'm at work from nine to five on weekdays", ""},
		{"one or two", "one or two things, maybe three or four, so five", ""},
		{"so after a number is a word", "call oh one six one four nine six oh five five five so thanks", "+441614960555"},
		{"a sentence with a number in it", "I need to go for lunch at two, call me on oh one six one four nine six oh five five five", "+441614960555"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindCallbackNumber(tt.text); got != tt.want {
				t.Errorf("FindCallbackNumber(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestDigitRuns(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"oh seven seven double oh, nine double oh, four five six", []string{"07700900456"}},
		{"triple five and double 3", []string{"55533"}},
		{"triple five, bye, double 3", []string{"555", "33"}},
		{"seven o'clock", []string{"7"}},
		{"on one or two", []string{"102"}}, // "or" between digits is a misheard "oh"; 102 is no number
		{"a hundred things", nil},
		{"oh eight hundred", []string{"0800"}},
		{"double trouble", nil},
		{"plus four four and plus one", []string{"+44", "+1"}},
		{"07700 900456. 020 7946 0018", []string{"07700900456", "02079460018"}},
		{"nine to five", []string{"925"}},
		{"nine to five six", []string{"9256"}},
		{"go to two", []string{"2"}},
		{"four for", []string{"4"}},
		{"a seven", []string{"07"}},
		{"a oh seven", []string{"07"}},
		{"three a seven", []string{"3", "07"}},
		{"one, to double oh", []string{"1200"}},
	}
	for _, tt := range tests {
		if got := digitRuns(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("digitRuns(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	cb := "not a number"
	got := Normalize(Summary{Summary: " x ", Intent: " Book a Repair! ", Sentiment: "angry", Urgency: "HIGH",
		ActionItems: []string{" a ", "a", "", "b"}, CallbackNumber: &cb})
	want := Summary{Summary: "x", Intent: "book_a_repair", Sentiment: "neutral", Urgency: "normal", ActionItems: []string{"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// The topic of a message names its intent whatever else it asks; a call back does only when
// no topic does, and not when the caller declines one.
func TestMessageIntent(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"The boiler stopped working. Please call me back on this number.", "repair_request"},
		{"Our water heater has no power, please call me.", "repair_request"},
		{"I was charged twice. Could you give me a ring on my mobile?", "billing_query"},
		{"We'd like to arrange a safety check. Call me back please.", "book_appointment"},
		{"Please call me back about the job at my mother's house.", "callback_request"},
		{"Just to say everything is fine now. Thank you. No need to call back.", "general_enquiry"},
		{"What time does your office open on Saturday?", "general_enquiry"},
		{"I want to complain: the boiler you fitted is broken.", "complaint"},
	} {
		lower := " " + normalizeSpace(strings.ToLower(c.text)) + " "
		if got := messageIntent(lower); got != c.want {
			t.Errorf("messageIntent(%q) = %s, want %s", c.text, got, c.want)
		}
	}
}
