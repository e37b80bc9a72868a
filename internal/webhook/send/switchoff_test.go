package send

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestSwitchedOff(t *testing.T) {
	at := func(s string) *metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Time{Time: tm}
	}
	for _, tc := range []struct {
		name        string
		paused      bool
		annotation  bool
		activatedAt *metav1.Time
		offAt       *metav1.Time
		want        bool
		deliverable bool
	}{
		{name: "never switched off", deliverable: true},
		{name: "paused by the owner", paused: true},
		{name: "switched off", offAt: at("2026-03-02T08:00:00Z"), want: true},
		{name: "switched off, an older switch-on", offAt: at("2026-03-02T08:00:00Z"), activatedAt: at("2026-03-01T08:00:00Z"), want: true},
		{name: "switched on in the same second", offAt: at("2026-03-02T08:00:00Z"), activatedAt: at("2026-03-02T08:00:00Z"), deliverable: true},
		{name: "switched on after", offAt: at("2026-03-02T08:00:00Z"), activatedAt: at("2026-03-02T09:00:00Z"), deliverable: true},
		{name: "switched on and paused", offAt: at("2026-03-02T08:00:00Z"), activatedAt: at("2026-03-02T09:00:00Z"), paused: true},
		{name: "by an earlier release", paused: true, annotation: true, want: true},
		{name: "by an earlier release, status recorded", paused: true, annotation: true, offAt: at("2026-03-02T08:00:00Z"),
			activatedAt: at("2026-03-02T09:00:00Z"), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &switchboardv1alpha1.WebhookEndpoint{}
			ep.Spec.Paused, ep.Spec.ActivatedAt, ep.Status.SwitchedOffAt = tc.paused, tc.activatedAt, tc.offAt
			if tc.annotation {
				ep.Annotations = map[string]string{AnnotationSwitchedOff: "2026-03-02T08:00:00Z"}
			}
			if got := SwitchedOff(ep); got != tc.want {
				t.Errorf("SwitchedOff = %v, want %v", got, tc.want)
			}
			if got := Deliverable(ep); got != tc.deliverable {
				t.Errorf("Deliverable = %v, want %v", got, tc.deliverable)
			}
		})
	}
}

func TestSwitchOnEndsTheSwitchOff(t *testing.T) {
	off := metav1.NewTime(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name       string
		now        time.Time
		annotation bool
		want       time.Time
	}{
		{name: "later clock", now: off.Add(90 * time.Minute), want: off.Add(90 * time.Minute)},
		{name: "a clock behind the controller's", now: off.Add(-time.Minute), want: off.Time},
		{name: "switched off by an earlier release", now: off.Add(time.Hour), annotation: true, want: off.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &switchboardv1alpha1.WebhookEndpoint{}
			ep.Status.SwitchedOffAt = off.DeepCopy()
			if tc.annotation {
				ep.Spec.Paused = true
				ep.Annotations = map[string]string{AnnotationSwitchedOff: "2026-03-02T08:00:00Z"}
			}
			if !SwitchedOff(ep) {
				t.Fatal("not switched off before")
			}
			SwitchOn(ep, tc.now)
			if SwitchedOff(ep) || !Deliverable(ep) {
				t.Errorf("still switched off: activatedAt %v, paused %v, annotations %v", ep.Spec.ActivatedAt, ep.Spec.Paused, ep.Annotations)
			}
			if !ep.Spec.ActivatedAt.Time.Equal(tc.want) {
				t.Errorf("activatedAt %v, want %v", ep.Spec.ActivatedAt, tc.want)
			}
		})
	}
}

func TestSwitchOffTimeIsNeverHiddenByAnOlderSwitchOn(t *testing.T) {
	now := time.Date(2026, 3, 3, 8, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		name        string
		activatedAt *metav1.Time
		want        time.Time
	}{
		{name: "never switched on", want: now.Truncate(time.Second)},
		{name: "switched on a day ago", activatedAt: &metav1.Time{Time: now.Add(-24 * time.Hour)}, want: now.Truncate(time.Second)},
		{name: "switched on by a clock ahead", activatedAt: &metav1.Time{Time: now.Add(time.Minute).Truncate(time.Second)},
			want: now.Add(time.Minute + time.Second).Truncate(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &switchboardv1alpha1.WebhookEndpoint{}
			ep.Spec.ActivatedAt = tc.activatedAt
			got := SwitchOffTime(ep, now)
			if !got.Equal(tc.want) {
				t.Errorf("SwitchOffTime = %v, want %v", got, tc.want)
			}
			ep.Status.SwitchedOffAt = &metav1.Time{Time: got}
			if !SwitchedOff(ep) {
				t.Error("the recorded switch-off is not in force")
			}
		})
	}
}
