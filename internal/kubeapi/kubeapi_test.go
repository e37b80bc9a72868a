package kubeapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/kubeapi"
)

func TestUnavailable(t *testing.T) {
	gr := schema.GroupResource{Group: "switchboard.dev", Resource: "webhookendpoints"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"deadline of the call", fmt.Errorf("list: %w", context.DeadlineExceeded), true},
		{"connection refused", refused, true},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), true},
		{"timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), true},
		{"service unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"not found", apierrors.NewNotFound(gr, "x"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "switchboard.dev", Kind: "WebhookEndpoint"}, "x", nil), false},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), false},
		{"internal error", apierrors.NewInternalError(errors.New("bug")), false},
		{"request cancelled by its client", context.Canceled, false},
		{"plain error", errors.New("no such kind"), false},
	} {
		if got := kubeapi.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// A kube-apiserver that accepts connections and never answers (as one that is frozen): every
// call ends at the deadline with an error Unavailable recognises, instead of hanging.
func TestCallsEndAtTheirDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	const timeout = 300 * time.Millisecond
	c, err := kubeapi.NewClient(&rest.Config{Host: "http://" + ln.Addr().String()}, clientgoscheme.Scheme, timeout)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(context.Context) error{
		"get": func(ctx context.Context) error {
			return c.Get(ctx, client.ObjectKey{Name: "x", Namespace: "y"}, &corev1.Secret{})
		},
		"list": func(ctx context.Context) error { return c.List(ctx, &corev1.SecretList{}) },
		"create": func(ctx context.Context) error {
			return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
		},
	}
	for name, call := range calls {
		start := time.Now()
		err := call(context.Background())
		took := time.Since(start)
		if !kubeapi.Unavailable(err) {
			t.Errorf("%s: err %v is not Unavailable", name, err)
		}
		// Discovery and the call each get the deadline at most once.
		if took > 3*timeout+time.Second {
			t.Errorf("%s took %s with a deadline of %s", name, took, timeout)
		}
	}
}
