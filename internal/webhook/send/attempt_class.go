package send

import (
	"context"
	"errors"
	"net"
)

// Result classes of an attempt, the label of switchboard_webhook_attempts_total.
const (
	Attempt2xx          = "2xx"
	Attempt3xx          = "3xx"
	Attempt4xx          = "4xx"
	Attempt5xx          = "5xx"
	AttemptTimeout      = "timeout"
	AttemptRefused      = "refused"
	AttemptNetworkError = "network_error"
)

// AttemptClass classifies an attempt by its answer's status, or by the error when no answer
// came. ok is false for an attempt cut short by its context (the manager stopping, the
// endpoint removed): it is not counted as an attempt, here or in the delivery.
func AttemptClass(ctx context.Context, status int, err error) (class string, ok bool) {
	if err == nil {
		switch {
		case status >= 200 && status < 300:
			return Attempt2xx, true
		case status >= 300 && status < 400:
			return Attempt3xx, true
		case status >= 400 && status < 500:
			return Attempt4xx, true
		default:
			return Attempt5xx, true
		}
	}
	var netErr net.Error
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return AttemptRefused, true
	case ctx.Err() != nil:
		return "", false
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return AttemptTimeout, true
	}
	return AttemptNetworkError, true
}
