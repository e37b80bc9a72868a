package events

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Live-only event names: the platform's call progress reports, on the live channel only
// (webhooks announce a call once it has ended).
const (
	CallRinging  = "call.ringing"
	CallAnswered = "call.answered"
)

// Progress is a call still in progress, as the platform reports it.
type Progress struct {
	AccountName  string
	CallPublicID string
	From, To     string
	StartedAt    time.Time
	Number       PayloadNumber
	Answer       PayloadAnswer
}

// ForProgress builds the payload of call.ringing or call.answered: the webhook payload's shape,
// with the call in progress (disposition "in-progress", no end, no card, no recording links).
func ForProgress(links Links, eventType string, p Progress, now time.Time) (json.RawMessage, error) {
	dashboard := strings.TrimRight(links.DashboardURL, "/") + "/calls/" + p.CallPublicID
	body := Payload{
		Event: eventType, ID: uuid.NewString(), CreatedAt: now.UTC().Truncate(time.Second),
		Account: PayloadAccount{Name: p.AccountName},
		Call: PayloadCall{ID: p.CallPublicID, Direction: "inbound", From: p.From, To: p.To, StartedAt: p.StartedAt.UTC(),
			Disposition: "in-progress"},
		Number: p.Number,
		Answer: p.Answer,
		Links:  PayloadLinks{Dashboard: &dashboard},
	}
	body.Answer.Answered = eventType == CallAnswered
	return json.Marshal(body)
}
