/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package benchkit

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// DeliveryHeader is the header whose value (an event id) identifies a delivery at the
// receiver; Switchboard's sender sets it, and the peer benchmarks have each peer send the event's id in it.
const DeliveryHeader = "X-Service-Delivery"

// Receiver is a local TLS receiver for five endpoints (paths /ep/0 ... /ep/4).
type Receiver struct {
	eventID  EventIDFunc
	Srv      *httptest.Server
	FailRate float64
	HangEp   int // -1: none
	// Delay holds every answer this long (a slow receiver); set before the first request.
	Delay time.Duration
	// Outage, while not OutageNone, makes every request fail that way (a receiver that is down).
	Outage   atomic.Int32
	mu       sync.Mutex
	ok       map[string]time.Time // event id + path → first 2xx
	taken    int                  // deliveries handed to Take (and forgotten)
	Attempts atomic.Int64
}

// The ways a Receiver's Outage fails its requests.
const (
	OutageNone        int32 = iota
	OutageUnavailable       // 503 at once
	OutageHang              // no answer until the sender gives up
)

// EventIDFunc finds the event id a delivery carries, from its headers and body; "" when it
// carries none (not a delivery the benchmark made).
type EventIDFunc func(h http.Header, body []byte) string

// DeliveryHeaderID reads the event id from DeliveryHeader, where Switchboard, Convoy and
// Outpost put it.
func DeliveryHeaderID(h http.Header, _ []byte) string { return h.Get(DeliveryHeader) }

// ReceiverOption configures a Receiver.
type ReceiverOption func(*Receiver)

// KeyedBy makes the receiver find each delivery's event id with eventID instead of
// DeliveryHeaderID, for a peer that cannot send an id of the sender's choosing in a header
// (the receiver then reads the whole body before it answers).
func KeyedBy(eventID EventIDFunc) ReceiverOption {
	return func(r *Receiver) { r.eventID = eventID }
}

func NewReceiver(opts ...ReceiverOption) *Receiver {
	r := &Receiver{ok: map[string]time.Time{}, HangEp: -1}
	for _, o := range opts {
		o(r)
	}
	r.Srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var id string
		if r.eventID == nil {
			_, _ = io.Copy(io.Discard, req.Body)
			id = req.Header.Get(DeliveryHeader)
		} else {
			body, _ := io.ReadAll(req.Body)
			id = r.eventID(req.Header, body)
		}
		r.Attempts.Add(1)
		if r.Delay > 0 {
			select {
			case <-time.After(r.Delay):
			case <-req.Context().Done():
				return
			}
		}
		switch r.Outage.Load() {
		case OutageUnavailable:
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case OutageHang:
			<-req.Context().Done()
			return
		}
		if r.HangEp >= 0 && req.URL.Path == fmt.Sprintf("/ep/%d", r.HangEp) {
			<-req.Context().Done()
			return
		}
		if r.FailRate > 0 && rand.Float64() < r.FailRate {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if id == "" { // not a delivery: a gateway's probe of the endpoint (Convoy pings it when created)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		key := id + req.URL.Path
		now := time.Now()
		r.mu.Lock()
		if _, seen := r.ok[key]; !seen {
			r.ok[key] = now
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	r.Srv.EnableHTTP2 = true
	r.Srv.StartTLS()
	return r
}

// Delivered is the number of distinct deliveries (event and endpoint) answered 2xx.
func (r *Receiver) Delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ok) + r.taken
}

// Delivery is one delivery a Receiver answered 2xx: the event it carried, the path it was
// sent to and when it first succeeded.
type Delivery struct {
	EventID, Path string
	At            time.Time
}

// Take returns the deliveries answered 2xx since the last Take and forgets them, so a long
// run's receiver holds only what came since (Delivered still counts them; a repeat of a
// forgotten delivery is counted again, which Attempts shows).
func (r *Receiver) Take() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Delivery, 0, len(r.ok))
	for key, at := range r.ok {
		if len(key) >= 36 {
			out = append(out, Delivery{EventID: key[:36], Path: key[36:], At: at})
		}
	}
	r.taken += len(r.ok)
	r.ok = map[string]time.Time{}
	return out
}

// each calls visit with the event id, path and time of the first 2xx of every delivery.
func (r *Receiver) each(visit func(id, path string, at time.Time)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, at := range r.ok {
		if len(key) < 36 {
			continue // no event id: not a delivery the benchmark made
		}
		visit(key[:36], key[36:], at)
	}
}
