package send

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
)

func TestAttemptClass(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	refusedConn := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	dnsTimeout := &net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}
	cases := []struct {
		name   string
		ctx    context.Context
		status int
		err    error
		class  string
		ok     bool
	}{
		{"200", live, 200, nil, Attempt2xx, true},
		{"204", live, 204, nil, Attempt2xx, true},
		{"301 not followed", live, 301, nil, Attempt3xx, true},
		{"404", live, 404, nil, Attempt4xx, true},
		{"429", live, 429, nil, Attempt4xx, true},
		{"500", live, 500, nil, Attempt5xx, true},
		{"503", live, 503, nil, Attempt5xx, true},
		{"address guard", live, 0, fmt.Errorf("dial: %w", ErrForbiddenAddress), AttemptRefused, true},
		{"address guard while cancelled", cancelled, 0, fmt.Errorf("dial: %w", ErrForbiddenAddress), AttemptRefused, true},
		{"client timeout", live, 0, fmt.Errorf("Post: %w", context.DeadlineExceeded), AttemptTimeout, true},
		{"network timeout", live, 0, dnsTimeout, AttemptTimeout, true},
		{"connection refused", live, 0, refusedConn, AttemptNetworkError, true},
		{"cancelled by the manager", cancelled, 0, fmt.Errorf("Post: %w", context.Canceled), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class, ok := AttemptClass(c.ctx, c.status, c.err)
			if class != c.class || ok != c.ok {
				t.Errorf("AttemptClass = %q, %v; want %q, %v", class, ok, c.class, c.ok)
			}
		})
	}
}
