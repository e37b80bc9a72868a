package portal

import (
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// attemptView is one attempt of a delivery as its page shows it.
type attemptView struct {
	Number       int
	SentAt       time.Time
	ResponseCode int
	Error        string
	// Duration is empty when it was not kept (a first attempt that succeeded).
	Duration string
	// Body is the answer's first bytes as text; BodyKept is false when none were kept.
	Body     string
	BodyKept bool
	Next     *time.Time
}

// deliveryAttempts is a delivery with its attempts.
type deliveryAttempts struct {
	endpoints.Delivery
	Attempts []attemptView
}

// attemptsOf is what the page shows of d's attempts: the rows kept of a delivery that
// needed more than one, in the order they were sent; else, for a delivery finished at its
// first attempt, that attempt as its history row records it (no duration nor body: a
// first attempt that succeeds writes no row of its own); else none.
func attemptsOf(d endpoints.Delivery, kept []store.DeliveryAttempt) []attemptView {
	if len(kept) > 0 {
		out := make([]attemptView, len(kept))
		for i, a := range kept {
			out[i] = attemptView{Number: i + 1, SentAt: a.SentAt, ResponseCode: a.ResponseCode, Error: a.Error,
				Duration: formatDuration(a.Duration), Body: strings.ToValidUTF8(string(a.ResponseBody), "\uFFFD"), BodyKept: true,
				Next: a.NextAttemptAt}
		}
		return out
	}
	if d.Attempts == 1 && (d.Status == send.DeliverySucceeded || d.Status == send.DeliveryFailed) {
		return []attemptView{{Number: 1, SentAt: d.CreatedAt, ResponseCode: d.ResponseCode, Error: d.LastError}}
	}
	return nil
}

// formatDuration words an attempt's duration to the millisecond.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// attemptsSince is where the page's read of kept attempts starts: a delivery's first
// attempt may be sent before the creation time the history records (the engine's first
// attempt comes before the delivery's resource), by an attempt's timeout and the hand-off.
func attemptsSince(ds []endpoints.Delivery) time.Time {
	var since time.Time
	for i, d := range ds {
		if i == 0 || d.CreatedAt.Before(since) {
			since = d.CreatedAt
		}
	}
	return since.Add(-10 * time.Minute)
}
