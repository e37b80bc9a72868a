package serve

import (
	"strings"
	"testing"
	"time"
)

func TestElectionOptionsResolve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      ElectionOptions
		want    ElectionOptions
		wantErr string
	}{
		{"defaults with a namespace", ElectionOptions{Namespace: "switchboard-system"},
			ElectionOptions{Namespace: "switchboard-system", ID: DefaultLeaderElectionID, LeaseDuration: 15 * time.Second,
				RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, ""},
		{"short lease for tests", ElectionOptions{Namespace: "ns", ID: "lease", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond},
			ElectionOptions{Namespace: "ns", ID: "lease", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}, ""},
		{"renew deadline not under the lease", ElectionOptions{Namespace: "ns", LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second},
			ElectionOptions{}, "--leader-election-retry-period < --leader-election-renew-deadline < --leader-election-lease-duration"},
		{"retry period not under the renew deadline", ElectionOptions{Namespace: "ns", RetryPeriod: 10 * time.Second},
			ElectionOptions{}, "--leader-election-retry-period <"},
		// This test does not run in a pod: no service account namespace is mounted.
		{"no namespace outside a pod", ElectionOptions{}, ElectionOptions{}, "set --leader-election-namespace"},
	} {
		got, err := tc.in.resolve()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
