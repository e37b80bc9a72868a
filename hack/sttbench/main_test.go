package main

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/transcription"
)

func TestWords(t *testing.T) {
	got := words("Call me on 020, please! It's Sarah.")
	want := []string{"call", "me", "on", "zero", "two", "zero", "please", "it's", "sarah"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("words: %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		ref, hyp string
		want     int
	}{
		{"a b c", "a b c", 0},
		{"a b c", "a x c", 1},   // substitution
		{"a b c", "a c", 1},     // deletion
		{"a b c", "a b b c", 1}, // insertion
		{"a b c", "", 3},        // everything deleted
		{"", "x y", 2},          // everything inserted
		{"call me back", "all be back now", 3},
	} {
		if got := editDistance(words(tc.ref), words(tc.hyp)); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.ref, tc.hyp, got, tc.want)
		}
	}
}

func TestAddSummary(t *testing.T) {
	ctx := context.Background()
	var sc score
	call := &sentences[0] // rescheduling an appointment, callback number read out
	sc.addSummary(ctx, call.text, call)
	// What Vosk made of it on telephone audio: the request survives, the number does not.
	sc.addSummary(ctx, "i live in favor of lamprey wait and or i need to reschedule my appointments on thursday before the summer's "+
		"please call me back on or famine am donald okay i'm not alone one to free", call)
	// A call that names no number is right only when the summary has none (not the caller's).
	none := &sentences[9]
	sc.addSummary(ctx, none.text, none)
	want := score{calls: 3, callback: 2, urgency: 3, intent: 3} // "call me back" does not hide the reschedule
	if sc != want {
		t.Errorf("score %+v, want %+v", sc, want)
	}
}

// TestCallScripts: the labelled set is large enough to report on, its labels are values the
// summary can take, and each script says its callback number so that the reader finds it.
func TestCallScripts(t *testing.T) {
	if len(callScripts) < 40 {
		t.Errorf("%d call scripts, want at least 40", len(callScripts))
	}
	if held := len(callScripts) - heldOutFrom; held < 10 {
		t.Errorf("%d held-out calls, want at least 10", held)
	}
	intents := map[string]bool{"repair_request": true, "book_appointment": true, "request_quote": true, "billing_query": true,
		"delivery_query": true, "complaint": true, "cancellation": true, "callback_request": true, "general_enquiry": true}
	seen := map[string]bool{}
	withNumber := 0
	for i, c := range callScripts {
		if seen[c.text] {
			t.Errorf("call %d repeats another", i+1)
		}
		seen[c.text] = true
		if !slices.Contains(transcription.Urgencies, c.urgency) || !intents[c.intent] {
			t.Errorf("call %d: urgency %q, intent %q", i+1, c.urgency, c.intent)
		}
		if got := transcription.FindCallbackNumber(c.text); got != c.callback {
			t.Errorf("call %d: the script's number reads as %q, labelled %q", i+1, got, c.callback)
		}
		if c.callback != "" {
			withNumber++
		}
	}
	if withNumber == 0 || withNumber == len(callScripts) {
		t.Errorf("%d of %d calls name a number: want some with and some without", withNumber, len(callScripts))
	}
}
