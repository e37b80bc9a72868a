/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package engine

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
)

func TestPromotionClaim(t *testing.T) {
	ns := tenancy.Namespace("acct_one")
	stuck := types.NamespacedName{Namespace: ns, Name: "whep-stuck"}
	busy := types.NamespacedName{Namespace: ns, Name: "whep-busy"}
	key := func(name string) store.DeferredEndpoint {
		return store.DeferredEndpoint{AccountPublicID: "acct_one", EndpointPublicID: name}
	}
	for _, c := range []struct {
		name                          string
		live                          map[types.NamespacedName]int
		total, maxLive, maxPer, batch int
		want                          store.DeferredClaim
		wantOK                        bool
	}{
		{"nothing live: a batch, each endpoint up to its bound", nil, 0, 20000, 2000, 200,
			store.DeferredClaim{Limit: 200, PerEndpoint: 200}, true},
		{"all live at the bound: no claim", map[types.NamespacedName]int{stuck: 2000}, 20000, 20000, 2000, 200,
			store.DeferredClaim{}, false},
		{"near the bound in all: the room left", map[types.NamespacedName]int{stuck: 10}, 19990, 20000, 2000, 200,
			store.DeferredClaim{Limit: 10, PerEndpoint: 10}, true},
		{"an endpoint at its bound takes none, one near it its room", map[types.NamespacedName]int{stuck: 3, busy: 2}, 5, 0, 3, 200,
			store.DeferredClaim{Limit: 200, PerEndpoint: 3, Room: map[store.DeferredEndpoint]int{key("whep-stuck"): 0, key("whep-busy"): 1}}, true},
		{"over the bound (deliveries made elsewhere): none", map[types.NamespacedName]int{stuck: 9}, 9, 0, 5, 200,
			store.DeferredClaim{Limit: 200, PerEndpoint: 5, Room: map[store.DeferredEndpoint]int{key("whep-stuck"): 0}}, true},
		{"no bounds: a batch", map[types.NamespacedName]int{stuck: 9}, 9, -1, -1, 50,
			store.DeferredClaim{Limit: 50, PerEndpoint: 50}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := promotionClaim(c.live, c.total, c.maxLive, c.maxPer, c.batch)
			if ok != c.wantOK || got.Limit != c.want.Limit || got.PerEndpoint != c.want.PerEndpoint || !maps.Equal(got.Room, c.want.Room) {
				t.Errorf("promotionClaim = %+v, %v; want %+v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}
