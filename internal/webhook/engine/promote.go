/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// promote turns deferred deliveries into resources as room frees, until ctx ends: after a
// live delivery is removed (Backlog.Freed), every PromoteInterval, and straight away while a
// pass promoted a full claim.
func (w *Dispatcher) promote(ctx context.Context) {
	ticker := time.NewTicker(w.PromoteInterval)
	defer ticker.Stop()
	var lastPass time.Time
	for {
		lastPass = time.Now()
		promoted, full, err := w.PromoteOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.Log.Error(err, "promote deferred webhook deliveries")
		}
		if full && promoted > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-w.Engine.Backlog.Freed():
			sleepCtx(ctx, roomGap-time.Since(lastPass))
		}
	}
}

// promotionClaim is what one claim of deferred deliveries may take, given the live
// deliveries of each endpoint and in all, the bounds (0 or less: none) and the batch size;
// false when there is no room at all. An endpoint not in live has room for maxPerEndpoint.
func promotionClaim(live map[types.NamespacedName]int, total, maxLive, maxPerEndpoint, batch int) (store.DeferredClaim, bool) {
	limit := batch
	if maxLive > 0 {
		limit = min(limit, maxLive-total)
	}
	if limit <= 0 {
		return store.DeferredClaim{}, false
	}
	c := store.DeferredClaim{Limit: limit, PerEndpoint: limit}
	if maxPerEndpoint > 0 {
		c.PerEndpoint = min(limit, maxPerEndpoint)
		for ep, n := range live {
			account, ok := tenancy.AccountOf(ep.Namespace)
			if room := maxPerEndpoint - n; ok && room < c.PerEndpoint {
				if c.Room == nil {
					c.Room = map[store.DeferredEndpoint]int{}
				}
				c.Room[store.DeferredEndpoint{AccountPublicID: account, EndpointPublicID: ep.Name}] = max(0, room)
			}
		}
	}
	return c, true
}

// reasonEndpointGone is the last error of a deferred delivery whose endpoint stopped taking
// deliveries while it waited.
const reasonEndpointGone = "Not attempted: the endpoint was paused, switched off or deleted while the delivery waited for room; resend it once the endpoint is active"

// PromoteOnce claims deferred deliveries within the room the caps leave, creates their
// resources (one that exists already is left as it is) or records them cancelled when their
// endpoint is paused, switched off or deleted, and deletes their rows. Rows it could not
// promote are released for the next pass. It returns how many rows left the table and
// whether the claim took all it was allowed.
func (w *Dispatcher) PromoteOnce(ctx context.Context) (int, bool, error) {
	w.defaults()
	if w.Engine.Backlog == nil {
		return 0, false, nil
	}
	live, total := w.Engine.Backlog.Live()
	c, ok := promotionClaim(live, total, w.MaxLive, w.MaxLivePerEndpoint, w.BatchSize)
	if !ok {
		return 0, false, nil
	}
	c.After = w.promoteCursor
	// As the outbox claim (dispatch): not cut off in flight; what it claims after ctx ended
	// fails to promote and is released below.
	claimCtx, cancelClaim := settling(ctx, w.Lease)
	defer cancelClaim()
	claimed, err := w.Store.ClaimDeferred(claimCtx, c, w.Clock.Now(), w.Lease)
	if err != nil {
		return 0, false, err
	}
	w.promoteCursor = claimed.Next
	var (
		mu            sync.Mutex
		done, release []string
		firstErr      error
	)
	outcome := func(name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			done = append(done, name)
			return
		}
		release = append(release, name)
		if firstErr == nil && ctx.Err() == nil && !errors.Is(err, errNoRoom) {
			firstErr = err
		}
	}
	endpoints := map[string]map[string]*switchboardv1alpha1.WebhookEndpoint{}
	g := errgroup.Group{}
	g.SetLimit(w.Parallel)
	for _, row := range claimed.Deliveries {
		eps, listed := endpoints[row.AccountPublicID]
		if !listed {
			list, err := w.Endpoints.ListEndpoints(ctx, row.AccountPublicID, store.EndpointsWritten{})
			if err != nil {
				outcome(row.DeliveryName, err)
				continue
			}
			eps = map[string]*switchboardv1alpha1.WebhookEndpoint{}
			for i := range list {
				if list[i].Spec.AccountID == row.AccountPublicID {
					eps[list[i].Name] = &list[i]
				}
			}
			endpoints[row.AccountPublicID] = eps
		}
		ep := eps[row.EndpointPublicID]
		g.Go(func() error {
			outcome(row.DeliveryName, w.promoteOne(ctx, row, ep))
			return nil
		})
	}
	_ = g.Wait()
	// The rows' fate is written even when ctx ended: a resource made stays made.
	bg, cancel := settling(ctx, settleTimeout)
	defer cancel()
	if err := w.Store.DeleteDeferred(bg, done); err != nil {
		return 0, false, err
	}
	if err := w.Store.ReleaseDeferred(bg, release); err != nil && firstErr == nil {
		firstErr = err
	}
	return len(done), len(claimed.Deliveries) == c.Limit, firstErr
}

// errNoRoom: the room seen at the claim was taken meanwhile (by the dispatcher, or another
// promotion); the row waits for the next pass.
var errNoRoom = errors.New("no room for the deferred delivery any more")

// promoteOne makes the resource of one deferred delivery to ep (nil: the endpoint is gone),
// or records it cancelled when ep takes no deliveries now.
func (w *Dispatcher) promoteOne(ctx context.Context, row store.DeferredDelivery, ep *switchboardv1alpha1.WebhookEndpoint) error {
	if ep == nil || ep.DeletionTimestamp != nil || !send.Deliverable(ep) {
		return w.Engine.Finish(ctx, store.FinishedDelivery{AccountPublicID: row.AccountPublicID, EndpointPublicID: row.EndpointPublicID,
			DeliveryName: row.DeliveryName, EventID: row.EventID, EventType: row.EventType, LastError: reasonEndpointGone,
			CreatedAt: row.DeferredAt}, switchboardv1alpha1.WebhookDeliveryPhaseCancelled)
	}
	d := send.NewDelivery(ep, row.EventID.String(), row.EventType, row.ResendOf, row.Salt)
	key := client.ObjectKeyFromObject(d)
	if _, ok := w.Engine.Backlog.ReserveIfRoom(key, client.ObjectKeyFromObject(ep), w.MaxLivePerEndpoint, w.MaxLive); !ok {
		return errNoRoom
	}
	err := w.Client.Create(ctx, d)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		w.Engine.Backlog.Unreserve(key)
	}
	return err
}
