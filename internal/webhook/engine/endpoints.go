package engine

import (
	"context"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/metrics"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
)

// EndpointLister lists the endpoints an account's events are fanned out to; written is the
// account's last write to them through the API, as the event's claim read it.
type EndpointLister interface {
	ListEndpoints(ctx context.Context, accountPublicID string, written store.EndpointsWritten) ([]switchboardv1alpha1.WebhookEndpoint, error)
}

// LiveEndpoints lists from kube-apiserver on every call.
type LiveEndpoints struct{ Reader client.Reader }

// ListEndpoints lists the account's endpoints live.
func (l LiveEndpoints) ListEndpoints(ctx context.Context, account string, _ store.EndpointsWritten) ([]switchboardv1alpha1.WebhookEndpoint, error) {
	return listEndpoints(ctx, l.Reader, account)
}

// WatchedEndpoints lists an account's endpoints from the manager's watched cache once the
// cache has seen the account's last write through the API, and from Live before then. So a
// fan-out costs kube-apiserver nothing, and an endpoint created or changed through the API
// still gets every event claimed after the API answered, whatever the watch's lag.
//
// The cache's progress is the highest resourceVersion its endpoint informer has handed over:
// one watch delivers the endpoints' changes in order, and the informer stores each before
// handing it to handlers, so the cache holds every change up to that version. Endpoints
// written past the API (kubectl) carry no such record and are read from the cache at once.
type WatchedEndpoints struct {
	// Cache is the manager's cache: its endpoint informer and the reads from it.
	Cache cache.Cache
	// Live reads kube-apiserver (kubeapi.OutageReader, which answers from the cache while
	// kube-apiserver does not).
	Live client.Reader

	seen atomic.Uint64
}

// Watch follows the cache's endpoint informer to know how far the cache has got. Call it
// before the manager starts.
func (w *WatchedEndpoints) Watch(ctx context.Context) error {
	inf, err := w.Cache.GetInformer(ctx, &switchboardv1alpha1.WebhookEndpoint{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
		DeleteFunc: w.observe,
	})
	return err
}

// Seen is the highest resourceVersion of an endpoint the cache holds or has removed.
func (w *WatchedEndpoints) Seen() uint64 { return w.seen.Load() }

func (w *WatchedEndpoints) observe(obj any) {
	if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = gone.Obj // its last known version: never past what the cache holds
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	v, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := w.seen.Load()
		if v <= cur || w.seen.CompareAndSwap(cur, v) {
			return
		}
	}
}

// ListEndpoints lists the account's endpoints from the cache when it is fresh enough for
// written, else live.
func (w *WatchedEndpoints) ListEndpoints(ctx context.Context, account string, written store.EndpointsWritten) ([]switchboardv1alpha1.WebhookEndpoint, error) {
	source, rd := "live", w.Live
	if CacheFresh(written, w.seen.Load()) {
		source, rd = "cache", w.Cache
	}
	metrics.WebhookEndpointListed(source)
	return listEndpoints(ctx, rd, account)
}

// CacheFresh reports whether a cache that has seen endpoint versions up to seen holds the
// account's last write through the API, written.
func CacheFresh(written store.EndpointsWritten, seen uint64) bool {
	switch {
	case written.Pending:
		return false // a write under way, or one whose version is not known
	case written.Version == 0:
		return true // no write through the API on record
	default:
		return seen >= written.Version
	}
}

func listEndpoints(ctx context.Context, rd client.Reader, account string) ([]switchboardv1alpha1.WebhookEndpoint, error) {
	list := &switchboardv1alpha1.WebhookEndpointList{}
	if err := rd.List(ctx, list, client.InNamespace(tenancy.Namespace(account))); err != nil {
		return nil, err
	}
	return list.Items, nil
}
