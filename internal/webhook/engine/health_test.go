package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestApplyAttemptOutcomes(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 3, 2, 9, 0, s, 0, time.UTC) }
	mt := func(s int) *metav1.Time { return &metav1.Time{Time: at(s)} }
	fail := func(s int) attemptOutcome { return attemptOutcome{ok: false, code: 500, at: at(s)} }
	okAt := func(s int) attemptOutcome { return attemptOutcome{ok: true, code: 204, at: at(s)} }
	healthy := switchboardv1alpha1.WebhookEndpointStatus{LastDeliveryAt: mt(0), LastResponseCode: 204}
	failing := switchboardv1alpha1.WebhookEndpointStatus{FailingSince: mt(0), LastDeliveryAt: mt(0), LastResponseCode: 500}
	cases := []struct {
		name        string
		before      switchboardv1alpha1.WebhookEndpointStatus
		outcomes    []attemptOutcome
		write       bool
		failing     *metav1.Time
		code        int32
		lastAttempt *metav1.Time
	}{
		{"nothing happened", healthy, nil, false, nil, 204, mt(0)},
		{"another success", healthy, []attemptOutcome{okAt(5)}, false, nil, 204, mt(0)},
		{"first failure sets failingSince", healthy, []attemptOutcome{fail(5)}, true, mt(5), 500, mt(5)},
		{"a success clears it", failing, []attemptOutcome{okAt(5)}, true, nil, 204, mt(5)},
		{"more failures keep the first", failing, []attemptOutcome{fail(5), fail(6)}, false, mt(0), 500, mt(0)},
		{"failure then success between writes: nothing to write", healthy, []attemptOutcome{fail(5), okAt(6)}, false, nil, 204, mt(0)},
		{"order is by send time, not arrival", healthy, []attemptOutcome{okAt(6), fail(5)}, false, nil, 204, mt(0)},
		{"success then failure: failing since the failure", failing, []attemptOutcome{okAt(5), fail(7), fail(8)}, true, mt(7), 500, mt(8)},
		{"a new code alone is written", healthy, []attemptOutcome{{ok: true, code: 200, at: at(5)}}, true, nil, 200, mt(5)},
		{"unchanged and a minute old: not written", healthy, []attemptOutcome{okAt(0).plus(61 * time.Second)}, false, nil, 204, mt(0)},
		{"unchanged but an hour old: refreshed", healthy, []attemptOutcome{okAt(0).plus(time.Hour + time.Second)}, true, nil, 204, mt(3601)},
		{"never written before", switchboardv1alpha1.WebhookEndpointStatus{}, []attemptOutcome{okAt(5)}, true, nil, 204, mt(5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := *c.before.DeepCopy()
			if got := applyAttemptOutcomes(&st, c.outcomes); got != c.write {
				t.Errorf("write = %v, want %v", got, c.write)
			}
			if !c.write {
				return // the caller writes nothing; st is not used
			}
			if !equalTimes(st.FailingSince, c.failing) {
				t.Errorf("failingSince = %v, want %v", st.FailingSince, c.failing)
			}
			if st.LastResponseCode != c.code {
				t.Errorf("lastResponseCode = %d, want %d", st.LastResponseCode, c.code)
			}
			if !equalTimes(st.LastDeliveryAt, c.lastAttempt) {
				t.Errorf("lastDeliveryAt = %v, want %v", st.LastDeliveryAt, c.lastAttempt)
			}
		})
	}
}

func (o attemptOutcome) plus(d time.Duration) attemptOutcome {
	o.at = o.at.Add(d)
	return o
}

func TestHealthWriteWait(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		lastWrite time.Time
		want      time.Duration
	}{
		{"never written", time.Time{}, 0},
		{"written long ago", now.Add(-time.Hour), 0},
		{"exactly a gap ago", now.Add(-time.Second), 0},
		{"written 300 ms ago", now.Add(-300 * time.Millisecond), 700 * time.Millisecond},
		{"written just now", now, time.Second},
	}
	for _, c := range cases {
		if got := healthWriteWait(c.lastWrite, now, time.Second); got != c.want {
			t.Errorf("%s: wait %v, want %v", c.name, got, c.want)
		}
	}
}
