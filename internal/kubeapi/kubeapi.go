// Package kubeapi gives the API facade a kube-apiserver client whose every call has a
// deadline, and tells "kube-apiserver is unavailable" apart from other errors, so a request
// never hangs for an outage and answers 503 rather than 500.
package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// DefaultTimeout bounds one call to kube-apiserver: well under a client's patience and the
// HTTP write timeout, well over a healthy apiserver's answer time (milliseconds).
const DefaultTimeout = 5 * time.Second

// NewClient is an uncached client (reads go to kube-apiserver: read-after-write, and no
// informers to keep in sync on replicas that are not the leader) whose every call ends
// after timeout.
func NewClient(cfg *rest.Config, scheme *runtime.Scheme, timeout time.Duration) (client.Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cfg = rest.CopyConfig(cfg)
	// The HTTP client's own timeout is a backstop for anything that escapes the context.
	cfg.Timeout = timeout
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create the kube-apiserver client: %w", err)
	}
	return WithDeadline(c, timeout), nil
}

// WithDeadline wraps c so that every call runs under a context that ends after timeout (or
// earlier, with its caller's). Watches are left alone: they are meant to be long.
func WithDeadline(c client.WithWatch, timeout time.Duration) client.WithWatch {
	bound := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, timeout)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			ctx, cancel := bound(ctx)
			defer cancel()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

// Unavailable reports whether err means kube-apiserver could not answer (unreachable,
// too slow, overloaded, shutting down) rather than that the request was wrong: the caller
// should answer 503 and let the client retry.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error // url.Error (dial, TLS, read) included
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err),
		utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		utilnet.IsHTTP2ConnectionLost(err), utilnet.IsTimeout(err),
		errors.As(err, &netErr):
		return true
	}
	return false
}

// NewPing returns a check that asks kube-apiserver's /readyz within timeout: nil when it
// answers healthy.
func NewPing(cfg *rest.Config, timeout time.Duration) (func(context.Context) error, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}, nil
}
