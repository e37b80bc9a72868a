package transcription

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOpenAISpeechSpeaksTheTranscriptionsProtocol(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		audio, _ := io.ReadAll(f)
		if got := r.FormValue("model") + "|" + r.FormValue("response_format") + "|" + r.FormValue("timestamp_granularities[]") +
			"|" + r.FormValue("language") + "|" + hdr.Filename + "|" + string(audio); got != "whisper-1|verbose_json|segment|en|rec.wav|RIFF-audio" {
			http.Error(w, `{"error":{"message":"unexpected form `+got+`"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"task":"transcribe","language":"english","duration":6.2,"text":" Hello. Please call me back. ",
			"segments":[{"id":0,"start":0.0,"end":2.1,"text":" Hello."},{"id":1,"start":2.1,"end":6.2,"text":" Please call me back.","speaker":"A"}]}`)
	}))
	defer srv.Close()
	stt := OpenAISpeech{OpenAIConfig: OpenAIConfig{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Model: "whisper-1"}, Language: "en"}
	got, err := stt.Transcribe(context.Background(), Audio{Data: strings.NewReader("RIFF-audio"), Filename: "rec.wav"})
	if err != nil {
		t.Fatal(err)
	}
	want := Speech{Text: "Hello. Please call me back.", Language: "en", Segments: []Segment{
		{Start: 0, End: 2.1, Speaker: "speaker", Text: "Hello."}, {Start: 2.1, End: 6.2, Speaker: "A", Text: "Please call me back."}}}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("got  %s\nwant %s", gj, wj)
	}

	// A wrong key is a permanent failure with the server's message.
	stt.APIKey = "sk-wrong"
	_, err = stt.Transcribe(context.Background(), Audio{Data: strings.NewReader("RIFF-audio"), Filename: "rec.wav"})
	if !IsPermanent(err) || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("wrong key: %v (permanent %v)", err, IsPermanent(err))
	}
}

func TestOpenAIErrorsTransientOrPermanent(t *testing.T) {
	for status, permanent := range map[int]bool{400: true, 401: true, 404: true, 408: false, 413: true, 429: false, 500: false, 503: false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"nope"}}`)
		}))
		stt := OpenAISpeech{OpenAIConfig: OpenAIConfig{BaseURL: srv.URL, Model: "m"}}
		_, err := stt.Transcribe(context.Background(), Audio{Data: strings.NewReader("x")})
		if err == nil || IsPermanent(err) != permanent {
			t.Errorf("status %d: %v, permanent %v want %v", status, err, IsPermanent(err), permanent)
		}
		srv.Close()
	}
	// Nobody listening: transient.
	stt := OpenAISpeech{OpenAIConfig: OpenAIConfig{BaseURL: "http://127.0.0.1:1", Model: "m"}}
	if _, err := stt.Transcribe(context.Background(), Audio{Data: strings.NewReader("x")}); err == nil || IsPermanent(err) {
		t.Errorf("connection refused: %v", err)
	}
}

func TestOpenAISummarizerAsksForTheSchema(t *testing.T) {
	var asked map[string]any
	answer := `{"summary":" Sam's boiler is broken; he wants a visit today. ","intent":"Repair Request","sentiment":"negative",` +
		`"urgency":"high","action_items":["Book an engineer for today",""],"callback_number":"oh one six one, 496 0555"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "wrong", http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&asked); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}}})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	s := OpenAISummarizer{OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "gpt-4o-mini"}}
	got, err := s.Summarize(context.Background(), SummaryInput{Text: "My boiler is broken.", CallerE164: "+447700900123"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary != "Sam's boiler is broken; he wants a visit today." || got.Intent != "repair_request" || got.Sentiment != "negative" ||
		got.Urgency != "high" || len(got.ActionItems) != 1 || got.ActionItems[0] != "Book an engineer for today" ||
		got.CallbackNumber == nil || *got.CallbackNumber != "+441614960555" {
		t.Errorf("summary %+v", got)
	}
	if asked["model"] != "gpt-4o-mini" {
		t.Errorf("model %v", asked["model"])
	}
	rf, _ := asked["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	req, _ := schema["required"].([]any)
	if rf["type"] != "json_schema" || js["strict"] != true || len(req) != 6 {
		t.Errorf("response_format %v", rf)
	}
	msgs, _ := asked["messages"].([]any)
	if len(msgs) != 2 || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "My boiler is broken.") {
		t.Errorf("messages %v", msgs)
	}

	// An answer that is not the JSON asked for is a (transient) failure.
	answer = "Sure! Here is a summary."
	if _, err := s.Summarize(context.Background(), SummaryInput{Text: "x"}); err == nil || IsPermanent(err) {
		t.Errorf("prose answer: %v", err)
	}
	// A number of a possible length in a range never allocated (Ofcom's drama mobiles) is
	// none, as in a transcript.
	answer = `{"summary":"s","intent":"i","sentiment":"neutral","urgency":"low","action_items":[],"callback_number":"07700 900456"}`
	got, err = s.Summarize(context.Background(), SummaryInput{Text: "x"})
	if err != nil || got.CallbackNumber != nil {
		t.Errorf("unallocated callback number: %+v %v", got, err)
	}
	// No callback number said: none, not the caller's own.
	answer = `{"summary":"s","intent":"i","sentiment":"neutral","urgency":"low","action_items":[],"callback_number":null}`
	got, err = s.Summarize(context.Background(), SummaryInput{Text: "x", CallerE164: "+447700900123"})
	if err != nil || got.CallbackNumber != nil {
		t.Errorf("no callback number: %+v %v", got, err)
	}
}

func TestReportedCallbackNumber(t *testing.T) {
	for _, tc := range []struct {
		reported *string
		want     string // "" for nil
	}{
		{nil, ""},
		{ptr(""), ""},
		{ptr("none"), ""},
		{ptr("0161 496 0555"), "+441614960555"},
		{ptr("01614960555"), "+441614960555"},
		{ptr("+44 20 7946 0018"), "+442079460018"},
		{ptr("oh one one three, four nine six, zero four five six"), "+441134960456"},
		{ptr("(0121) 496-0000"), "+441214960000"},
		{ptr("+33 1 42 68 53 00"), "+33142685300"},
		// No number: a digit short, ranges never allocated, too short to be one.
		{ptr("0161 496 055"), ""},
		{ptr("07700 900456"), ""},
		{ptr("0100 000 0000"), ""},
		{ptr("+44 1"), ""},
		{ptr("12345"), ""},
	} {
		got := ReportedCallbackNumber(tc.reported)
		if (got == nil) != (tc.want == "") || (got != nil && *got != tc.want) {
			r := "<nil>"
			if tc.reported != nil {
				r = *tc.reported
			}
			g := "<nil>"
			if got != nil {
				g = *got
			}
			t.Errorf("ReportedCallbackNumber(%q) = %s, want %q", r, g, tc.want)
		}
	}
}

func ptr(s string) *string { return &s }
