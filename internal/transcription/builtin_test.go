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
	for text, want := range map[string]string{
		"call me on 07700 900456 please":                   "+447700900456",
		"ring +44 (0)20 7946 0018":                         "+442079460018",
		"my number is +1 415 555 2671":                     "+14155552671",
		"oh two oh seven nine four six oh oh one eight":    "+442079460018",
		"one two three":                                    "",
		"invoice 1234 5678":                                "",
		"no number here":                                   "",
		"07700 900456 or 020 7946 0018, whichever is best": "+447700900456",
	} {
		if got := FindCallbackNumber(text); got != want {
			t.Errorf("FindCallbackNumber(%q) = %q, want %q", text, got, want)
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
