package transcription

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/phone"
)

// Audio is a recording handed to a speech-to-text engine.
type Audio struct {
	Data io.Reader
	// Filename is a name with the right extension (engines guess the format from it).
	Filename    string
	ContentType string
}

// Segment is a stretch of speech; Start and End are seconds from the start.
type Segment struct {
	Start   float64
	End     float64
	Speaker string
	Text    string
}

// Speech is a speech-to-text result.
type Speech struct {
	Text string
	// Language is a BCP 47 / ISO 639-1 code such as "en" (empty when unknown).
	Language string
	Segments []Segment
}

// SpeechToText turns a recording into text.
type SpeechToText interface {
	Transcribe(ctx context.Context, audio Audio) (Speech, error)
}

// SummaryInput is what a summary is made from.
type SummaryInput struct {
	Text     string
	Segments []Segment
	// CallerE164 is the caller's number, context for a model; it is never taken as the
	// callback number, which is only a number said in the call.
	CallerE164 string
}

// Summary is the AI summary of a call.
type Summary struct {
	Summary   string
	Intent    string
	Sentiment string // positive, neutral, negative
	Urgency   string // low, normal, high
	// ActionItems become to-dos.
	ActionItems []string
	// CallbackNumber is a number said in the call, in E.164; nil when none was.
	CallbackNumber *string
}

// Summarizer makes the AI summary of a transcript.
type Summarizer interface {
	Summarize(ctx context.Context, in SummaryInput) (Summary, error)
}

// Sentiments and urgencies a summary may carry.
var (
	Sentiments = []string{"positive", "neutral", "negative"}
	Urgencies  = []string{"low", "normal", "high"}
)

// maxActionItems bounds the to-dos made from one call.
const maxActionItems = 10

// Normalize makes a summary safe to store whatever the engine returned: sentiment and urgency
// within their values (neutral and normal otherwise), trimmed non-empty action items (at most
// 10, each at most 500 characters), the intent in snake_case, and the callback number in
// E.164 (national numbers read as UK numbers) or nil.
func Normalize(s Summary) Summary {
	if !slices.Contains(Sentiments, s.Sentiment) {
		s.Sentiment = "neutral"
	}
	if !slices.Contains(Urgencies, s.Urgency) {
		s.Urgency = "normal"
	}
	s.Summary = strings.TrimSpace(s.Summary)
	s.Intent = snake(s.Intent)
	items := []string{}
	for _, it := range s.ActionItems {
		it = strings.TrimSpace(it)
		if it == "" || slices.Contains(items, it) {
			continue
		}
		if r := []rune(it); len(r) > 500 {
			it = string(r[:500])
		}
		items = append(items, it)
		if len(items) == maxActionItems {
			break
		}
	}
	s.ActionItems = items
	if s.CallbackNumber != nil {
		if e164, ok := phone.ToE164(*s.CallbackNumber); ok {
			s.CallbackNumber = &e164
		} else {
			s.CallbackNumber = nil
		}
	}
	return s
}

func snake(s string) string {
	var b strings.Builder
	lastUnderscore := true
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			lastUnderscore = false
		case !lastUnderscore:
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	out := strings.TrimSuffix(b.String(), "_")
	if len(out) > 64 {
		out = strings.TrimSuffix(out[:64], "_")
	}
	return out
}

// PermanentError is a failure retrying cannot fix (the audio is unreadable, the engine
// refuses the request as invalid): the job fails at once and its charge is refunded.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as permanent.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err was marked permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
