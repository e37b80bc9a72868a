// Package webhooks is the delivery engine of the webhook controllers: the retry schedule
// and switch-off rule of the spec, request signing, an HTTP sender that refuses redirects
// and private addresses, and URL validation against server-side request forgery.
package send

import "time"

// RetryDelays is the spec's schedule: after a failed attempt the next comes after these
// delays in turn; when the last retry fails the delivery is failed.
var RetryDelays = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 10 * time.Hour}

// MaxAttempts is the first attempt and every retry.
var MaxAttempts = len(RetryDelays) + 1

// SwitchOffAfter is how long an endpoint may fail continuously before it is switched off.
const SwitchOffAfter = 24 * time.Hour

// NextAttempt says when the attempt after a failed one is due: attempts is how many were
// made so far (the failed one included), last when the failed one was sent. ok is false when
// no retry is left and the delivery is failed.
func NextAttempt(attempts int, last time.Time) (next time.Time, ok bool) {
	if attempts < 1 || attempts > len(RetryDelays) {
		return time.Time{}, false
	}
	return last.Add(RetryDelays[attempts-1]), true
}

// SwitchOffAt is when an endpoint failing since failingSince is switched off.
func SwitchOffAt(failingSince time.Time) time.Time { return failingSince.Add(SwitchOffAfter) }

// ShouldSwitchOff reports whether an endpoint whose deliveries have failed continuously
// since failingSince (nil: not failing) is switched off at now.
func ShouldSwitchOff(failingSince *time.Time, now time.Time) bool {
	return failingSince != nil && !now.Before(SwitchOffAt(*failingSince))
}
