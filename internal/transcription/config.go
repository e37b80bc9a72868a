package transcription

import "fmt"

// Engine names (configuration).
const (
	// SpeechLocal is the default local engine (Vosk).
	SpeechLocal        = "local"
	SpeechPocketSphinx = "pocketsphinx"
	SpeechVosk         = "vosk"
	SpeechOpenAI       = "openai"
	SummaryBuiltin     = "builtin"
	SummaryOpenAI      = "openai"
)

// EngineConfig chooses the engines.
type EngineConfig struct {
	// Speech is "vosk" (also "local", the default; hack/install-vosk.sh), "pocketsphinx" or
	// "openai" (any server speaking the OpenAI /audio/transcriptions protocol: OpenAI, hosted
	// Whisper services, whisper servers). The local engines get two-channel recordings split
	// into caller and agent (ChannelSpeakers).
	Speech       string
	SpeechURL    string // API root with version, e.g. https://api.openai.com/v1
	SpeechModel  string // default whisper-1
	SpeechAPIKey string
	// Summary is "builtin" (no network, the default) or "openai" (chat completions with a JSON schema).
	Summary       string
	SummaryURL    string
	SummaryModel  string // default gpt-4o-mini
	SummaryAPIKey string
}

// NewEngines builds the configured engines.
func NewEngines(c EngineConfig) (SpeechToText, Summarizer, error) {
	var stt SpeechToText
	switch c.Speech {
	case "", SpeechLocal, SpeechVosk:
		stt = ChannelSpeakers{Engine: Vosk{}}
	case SpeechPocketSphinx:
		stt = ChannelSpeakers{Engine: PocketSphinx{}}
	case SpeechOpenAI:
		if c.SpeechURL == "" {
			return nil, nil, fmt.Errorf("the openai speech engine needs a URL (e.g. https://api.openai.com/v1)")
		}
		if c.SpeechModel == "" {
			c.SpeechModel = "whisper-1"
		}
		stt = OpenAISpeech{OpenAIConfig: OpenAIConfig{BaseURL: c.SpeechURL, APIKey: c.SpeechAPIKey, Model: c.SpeechModel}}
	default:
		return nil, nil, fmt.Errorf("speech engine %q: want %q, %q, %q or %q", c.Speech, SpeechLocal, SpeechPocketSphinx, SpeechVosk, SpeechOpenAI)
	}
	var sum Summarizer
	switch c.Summary {
	case "", SummaryBuiltin:
		sum = BuiltinSummarizer{}
	case SummaryOpenAI:
		if c.SummaryURL == "" {
			return nil, nil, fmt.Errorf("the openai summary engine needs a URL (e.g. https://api.openai.com/v1)")
		}
		if c.SummaryModel == "" {
			c.SummaryModel = "gpt-4o-mini"
		}
		sum = OpenAISummarizer{OpenAIConfig{BaseURL: c.SummaryURL, APIKey: c.SummaryAPIKey, Model: c.SummaryModel}}
	default:
		return nil, nil, fmt.Errorf("summary engine %q: want %q or %q", c.Summary, SummaryBuiltin, SummaryOpenAI)
	}
	return stt, sum, nil
}
