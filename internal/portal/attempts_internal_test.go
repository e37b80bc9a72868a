package portal

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

func TestAttemptsOf(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	next := t0.Add(time.Minute)
	kept := []store.DeliveryAttempt{
		{Attempt: 1, SentAt: t0, ResponseCode: 503, Error: "HTTP 503", Duration: 1500 * time.Millisecond, ResponseBody: []byte("busy"), NextAttemptAt: &next},
		{Attempt: 2, SentAt: next, ResponseCode: 200, Duration: 42 * time.Millisecond, ResponseBody: []byte("ok\xff")},
	}
	for _, c := range []struct {
		name string
		d    endpoints.Delivery
		kept []store.DeliveryAttempt
		want []attemptView
	}{
		{"retried: the rows kept, in order", endpoints.Delivery{Status: send.DeliverySucceeded, Attempts: 2}, kept, []attemptView{
			{Number: 1, SentAt: t0, ResponseCode: 503, Error: "HTTP 503", Duration: "1.5s", Body: "busy", BodyKept: true, Next: &next},
			{Number: 2, SentAt: next, ResponseCode: 200, Duration: "42ms", Body: "ok\uFFFD", BodyKept: true},
		}},
		{"succeeded first time: its history row", endpoints.Delivery{Status: send.DeliverySucceeded, Attempts: 1, ResponseCode: 204, CreatedAt: t0},
			nil, []attemptView{{Number: 1, SentAt: t0, ResponseCode: 204}}},
		{"pending: none", endpoints.Delivery{Status: send.DeliveryPending}, nil, nil},
		{"cancelled before an attempt: none", endpoints.Delivery{Status: send.DeliveryCancelled, LastError: "paused"}, nil, nil},
		{"failed without an attempt (its event gone): none", endpoints.Delivery{Status: send.DeliveryFailed, LastError: "gone"}, nil, nil},
	} {
		if got := attemptsOf(c.d, c.kept); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: attemptsOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}
