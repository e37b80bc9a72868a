package transcription

import (
	"context"
	"reflect"
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
			SummaryInput{Text: "Hi, it's Sam. My boiler is broken and there's no hot water. Please call me back on oh seven seven double oh nine double oh four five six as soon as possible.", CallerE164: "+447700900123"},
			Summary{Summary: "Hi, it's Sam. My boiler is broken and there's no hot water.", Intent: "repair_request", Sentiment: "negative",
				Urgency: "high", ActionItems: []string{"Call back the caller on +447700900456"}, CallbackNumber: str("+447700900456")}},
		{"friendly quote request, no rush, written number",
			SummaryInput{Text: "Thanks for the great job last time. Could you send me a quote for a new kitchen tap? No rush. My number is 020 7946 0018.", CallerE164: "+447700900123"},
			Summary{Summary: "Thanks for the great job last time. Could you send me a quote for a new kitchen tap?", Intent: "request_quote",
				Sentiment: "positive", Urgency: "low", ActionItems: []string{"Follow up: Could you send me a quote for a new kitchen tap"},
				CallbackNumber: str("+442079460018")}},
		{"plain message, caller's number as callback",
			SummaryInput{Text: "Just to say the parcel arrived", CallerE164: "+447700900123"},
			Summary{Summary: "Just to say the parcel arrived", Intent: "delivery_query", Sentiment: "neutral", Urgency: "normal",
				ActionItems: []string{}, CallbackNumber: str("+447700900123")}},
		{"complaint",
			SummaryInput{Text: "I want to complain. The engineer never turned up and I'm very disappointed. I would like a refund.", CallerE164: "anonymous"},
			Summary{Summary: "I want to complain. The engineer never turned up and I'm very disappointed.", Intent: "complaint", Sentiment: "negative",
				Urgency: "normal", ActionItems: []string{"Follow up: I want to complain", "Follow up: I would like a refund"}}},
		{"no speech",
			SummaryInput{Text: "  ", CallerE164: "+447700900123"},
			Summary{Summary: "No speech was recognised in the recording.", Intent: "no_speech", Sentiment: "neutral", Urgency: "normal",
				ActionItems: []string{}, CallbackNumber: str("+447700900123")}},
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
		{"written mobile", "call me on 07700 900456 please", "+447700900456"},
		{"international with the trunk 0 in brackets", "ring +44 (0)20 7946 0018", "+442079460018"},
		{"international, not UK", "my number is +1 415 555 2671", "+14155552671"},
		{"written with hyphens", "it's 020-7946-0018", "+442079460018"},
		{"spoken, oh for zero", "oh two oh seven nine four six oh oh one eight", "+442079460018"},
		{"spoken with double and commas", "Please call me back on oh seven seven double oh, nine double oh, four five six.", "+447700900456"},
		{"spoken with zero", "zero two zero seven nine four six, zero zero one eight", "+442079460018"},
		{"spoken with nought and triple", "nought one six one, four nine six, nought triple five", "+441614960555"},
		{"double before a written digit", "oh seven seven double 0 nine double 0 four five six", "+447700900456"},
		{"words and digits mixed", "07700 nine double oh four five six", "+447700900456"},
		{"digits then words", "oh seven seven 00 900 four five six", "+447700900456"},
		{"filler between the groups", "oh seven seven double oh, that's nine double oh, and four five six", "+447700900456"},
		{"filler on between the groups", "my number is oh one one three on four nine six oh oh three three", "+441134960033"},
		{"eight hundred", "freephone oh eight hundred, one two three four five six seven", "+448001234567"},
		{"plus four four", "plus four four seven seven double oh nine double oh one two three", "+447700900123"},
		{"other digits before the number", "i have one two three things so oh seven seven double oh nine double oh four five six", "+447700900456"},
		{"a second number is not the first", "07700 900456 or 020 7946 0018, whichever is best", "+447700900456"},
		{"engine output without punctuation", "please call me back on oh seven seven double oh nine double oh four five six thank you", "+447700900456"},
		{"upper case", "Oh Seven Seven Double Oh Nine Double Oh Four Five Six", "+447700900456"},

		{"too few digits", "one two three", ""},
		{"a time", "come at seven o'clock, or at half past nine", ""},
		{"a few things", "one or two things, maybe three or four", ""},
		{"a year in words", "it was fitted in two thousand and nineteen", ""},
		{"a year in digits", "since 2019, and again in 2023", ""},
		{"a year read out", "the boiler is from twenty oh nine", ""},
		{"an order number", "order number four five two one", ""},
		{"written numbers that are not phone numbers", "invoice 1234 5678", ""},
		{"a sentence end splits a number", "call oh seven seven double oh. nine double oh four five six", ""},
		{"another word splits a number", "oh seven seven double oh bye nine double oh four five six", ""},
		{"too many fillers split a number", "oh seven seven double oh and then um nine double oh four five six", ""},
		{"double oh oh is not a country code", "double oh four five six seven eight nine one two three four", ""},
		{"no number here", "no number here", ""},
		{"empty", "", ""},
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
		{"on one or two", []string{"1", "2"}},
		{"a hundred things", nil},
		{"oh eight hundred", []string{"0800"}},
		{"double trouble", nil},
		{"plus four four and plus one", []string{"+44", "+1"}},
		{"07700 900456. 020 7946 0018", []string{"07700900456", "02079460018"}},
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
