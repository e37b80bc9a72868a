package transcription

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
)

// OpenAIConfig configures a client of an OpenAI-compatible API (OpenAI itself, a hosted
// service speaking the protocol, or a self-hosted Whisper / LLM server).
type OpenAIConfig struct {
	// BaseURL is the API root including the version, e.g. https://api.openai.com/v1 or
	// http://whisper.internal:8000/v1.
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model, e.g. whisper-1 or gpt-4o-mini.
	Model string
	// HTTPClient defaults to a client with a 10-minute timeout.
	HTTPClient *http.Client
}

func (c OpenAIConfig) client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return &http.Client{Timeout: 10 * time.Minute}
}

func (c OpenAIConfig) endpoint(path string) string {
	return strings.TrimRight(c.BaseURL, "/") + path
}

// do sends req and decodes a 2xx JSON answer into dst. 4xx answers other than 408 and 429
// are permanent (the request itself is wrong: retrying cannot help); the rest are transient.
func (c OpenAIConfig) do(req *http.Request, dst any) error {
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", req.URL.Redacted(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("%s answered %d: %s", req.URL.Redacted(), resp.StatusCode, errorMessage(body))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
			return Permanent(err)
		}
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

// errorMessage picks the message out of an OpenAI-style error body ({"error":{"message":...}}).
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// OpenAISpeech is a speech-to-text client of POST {BaseURL}/audio/transcriptions with
// response_format=verbose_json (text, language and timed segments).
type OpenAISpeech struct {
	OpenAIConfig
	// Language, when set (ISO 639-1, e.g. "en"), is passed as a hint.
	Language string
}

type verboseTranscription struct {
	Text     string  `json:"text"`
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Segments []struct {
		Start   float64 `json:"start"`
		End     float64 `json:"end"`
		Text    string  `json:"text"`
		Speaker string  `json:"speaker"`
	} `json:"segments"`
}

// Transcribe uploads the audio and returns its text, language and segments.
func (o OpenAISpeech) Transcribe(ctx context.Context, a Audio) (Speech, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	name := a.Filename
	if name == "" {
		name = "audio.wav"
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return Speech{}, err
	}
	if _, err := io.Copy(fw, a.Data); err != nil {
		return Speech{}, fmt.Errorf("read the audio: %w", err)
	}
	fields := [][2]string{{"model", o.Model}, {"response_format", "verbose_json"}, {"timestamp_granularities[]", "segment"}}
	if o.Language != "" {
		fields = append(fields, [2]string{"language", o.Language})
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return Speech{}, err
		}
	}
	if err := mw.Close(); err != nil {
		return Speech{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint("/audio/transcriptions"), &buf)
	if err != nil {
		return Speech{}, Permanent(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out verboseTranscription
	if err := o.do(req, &out); err != nil {
		return Speech{}, err
	}
	s := Speech{Text: strings.TrimSpace(out.Text), Language: languageCode(out.Language), Segments: make([]Segment, 0, len(out.Segments))}
	for _, sg := range out.Segments {
		speaker := sg.Speaker
		if speaker == "" {
			speaker = "speaker"
		}
		s.Segments = append(s.Segments, Segment{Start: sg.Start, End: sg.End, Speaker: speaker, Text: strings.TrimSpace(sg.Text)})
	}
	if len(s.Segments) == 0 && s.Text != "" {
		s.Segments = append(s.Segments, Segment{Start: 0, End: out.Duration, Speaker: "speaker", Text: s.Text})
	}
	return s, nil
}

// languageNames maps the language names Whisper's verbose_json gives ("english") to codes.
var languageNames = map[string]string{
	"english": "en", "welsh": "cy", "french": "fr", "german": "de", "spanish": "es", "italian": "it",
	"portuguese": "pt", "dutch": "nl", "polish": "pl", "romanian": "ro", "russian": "ru", "ukrainian": "uk",
	"turkish": "tr", "arabic": "ar", "hindi": "hi", "urdu": "ur", "punjabi": "pa", "bengali": "bn",
	"chinese": "zh", "japanese": "ja", "korean": "ko", "irish": "ga", "scottish gaelic": "gd",
}

// languageCode turns a language name or code into a lower-case code ("English" → "en").
func languageCode(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if code, ok := languageNames[s]; ok {
		return code
	}
	return s
}

// OpenAISummarizer makes summaries with POST {BaseURL}/chat/completions, asking for JSON that
// follows a schema of the summary fields (response_format json_schema, strict).
type OpenAISummarizer struct {
	OpenAIConfig
}

// summaryPrompt is the system message of OpenAISummarizer.
const summaryPrompt = `You summarise phone calls to a UK business for its staff. From the call transcript, return:
- summary: one or two plain sentences saying who called and what they want;
- intent: the caller's purpose in snake_case, e.g. book_appointment, request_quote, callback_request, complaint, billing_query, general_enquiry;
- sentiment: positive, neutral or negative (the caller's mood);
- urgency: low, normal or high;
- action_items: short imperative follow-ups for staff (empty when none);
- callback_number: the number the caller asked to be called back on, as they said it, or null (the caller's own number is ` +
	`known separately).`

// summarySchema is the JSON schema of the answer.
var summarySchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"summary":         map[string]any{"type": "string"},
		"intent":          map[string]any{"type": "string"},
		"sentiment":       map[string]any{"type": "string", "enum": Sentiments},
		"urgency":         map[string]any{"type": "string", "enum": Urgencies},
		"action_items":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"callback_number": map[string]any{"type": []string{"string", "null"}},
	},
	"required":             []string{"summary", "intent", "sentiment", "urgency", "action_items", "callback_number"},
	"additionalProperties": false,
}

// Summarize asks the model for the summary fields.
func (o OpenAISummarizer) Summarize(ctx context.Context, in SummaryInput) (Summary, error) {
	if strings.TrimSpace(in.Text) == "" {
		return emptySummary(), nil
	}
	reqBody := map[string]any{
		"model": o.Model,
		"messages": []map[string]string{
			{"role": "system", "content": summaryPrompt},
			{"role": "user", "content": "Caller's number: " + in.CallerE164 + "\n\nTranscript:\n" + in.Text},
		},
		"temperature": 0,
		"response_format": map[string]any{
			"type":        "json_schema",
			"json_schema": map[string]any{"name": "call_summary", "strict": true, "schema": summarySchema},
		},
	}
	b, err := json.Marshal(reqBody)
	if err != nil {
		return Summary{}, Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint("/chat/completions"), bytes.NewReader(b))
	if err != nil {
		return Summary{}, Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
				Refusal string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := o.do(req, &out); err != nil {
		return Summary{}, err
	}
	if len(out.Choices) == 0 {
		return Summary{}, errors.New("the chat completion has no choices")
	}
	msg := out.Choices[0].Message
	if msg.Refusal != "" {
		return Summary{}, Permanent(fmt.Errorf("the model refused: %s", msg.Refusal))
	}
	var got struct {
		Summary        string   `json:"summary"`
		Intent         string   `json:"intent"`
		Sentiment      string   `json:"sentiment"`
		Urgency        string   `json:"urgency"`
		ActionItems    []string `json:"action_items"`
		CallbackNumber *string  `json:"callback_number"`
	}
	if err := json.Unmarshal([]byte(msg.Content), &got); err != nil {
		return Summary{}, fmt.Errorf("the model's answer is not the summary JSON: %w", err)
	}
	s := Summary{Summary: got.Summary, Intent: got.Intent, Sentiment: got.Sentiment, Urgency: got.Urgency,
		ActionItems: got.ActionItems, CallbackNumber: ReportedCallbackNumber(got.CallbackNumber)}
	return Normalize(s), nil
}
