package servetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
)

// Receiver is the HTTPS webhook receiver: one inbox per path, each verifying signatures with
// its endpoint's secret. It names the replica that sent each delivery by finding which
// process owns the client end of the connection (/proc), so "delivered twice by two
// replicas" is observed, not assumed.
type Receiver struct {
	srv      *httptest.Server
	senderOf func(port int) string
	mu       sync.Mutex
	inboxes  map[string]*Inbox
}

// Delivery is one request the receiver accepted (signature verified).
type Delivery struct {
	EventID, CallID, Type string
	Sender                string // the replica's name, "" when not found
	At                    time.Time
	Body                  []byte // as received
}

// Inbox is what one endpoint received.
type Inbox struct {
	verifier webhookverify.Verifier
	mu       sync.Mutex
	got      []Delivery
	bad      int
	delay    time.Duration // each answer is held back this long (a slow receiver)
	// inFlight is how many requests are being answered now, maxInFlight the most at once.
	inFlight, maxInFlight int
}

// SetSecret makes the inbox verify with secret from now on (a rotated or restored secret).
func (in *Inbox) SetSecret(secret string) {
	in.mu.Lock()
	in.verifier = webhookverify.Verifier{Secret: secret}
	in.mu.Unlock()
}

// SetDelay makes the receiver hold each answer back by d.
func (in *Inbox) SetDelay(d time.Duration) {
	in.mu.Lock()
	in.delay = d
	in.mu.Unlock()
}

type senderKey struct{}

func newReceiver(senderOf func(port int) string) *Receiver {
	r := &Receiver{inboxes: map[string]*Inbox{}, senderOf: senderOf}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			return context.WithValue(ctx, senderKey{}, r.senderOf(a.Port))
		}
		return ctx
	}
	r.srv.StartTLS()
	return r
}

// URL is the receiver's URL for path.
func (r *Receiver) URL(path string) string { return r.srv.URL + path }

// Inbox makes (or replaces) the inbox of path, verifying with secret.
func (r *Receiver) Inbox(path, secret string) *Inbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := &Inbox{verifier: webhookverify.Verifier{Secret: secret}}
	r.inboxes[path] = in
	return in
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	in := r.inboxes[req.URL.Path]
	r.mu.Unlock()
	if in == nil {
		http.NotFound(w, req)
		return
	}
	in.mu.Lock()
	verifier := in.verifier
	in.inFlight++
	in.maxInFlight = max(in.maxInFlight, in.inFlight)
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.inFlight--
		in.mu.Unlock()
	}()
	body, err := verifier.Request(req)
	if err != nil {
		in.mu.Lock()
		in.bad++
		in.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p struct {
		Type string `json:"type"`
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	_ = json.Unmarshal(body, &p)
	sender, _ := req.Context().Value(senderKey{}).(string)
	in.mu.Lock()
	delay := in.delay
	in.mu.Unlock()
	time.Sleep(delay)
	in.mu.Lock()
	in.got = append(in.got, Delivery{EventID: req.Header.Get(webhookverify.HeaderDelivery), CallID: p.Call.ID,
		Type: p.Type, Sender: sender, At: time.Now(), Body: body})
	in.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// MaxInFlight is the most requests the inbox was answering at once since it was made or
// last reset; reset starts a new count from the requests in flight now.
func (in *Inbox) MaxInFlight(reset bool) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := in.maxInFlight
	if reset {
		in.maxInFlight = in.inFlight
	}
	return n
}

// Deliveries is a copy of what the inbox received.
func (in *Inbox) Deliveries() []Delivery {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Delivery(nil), in.got...)
}

// Tally is what an inbox received for a set of reported calls.
type Tally struct {
	Missing []string // reported calls with no delivery
	// Repeats: deliveries beyond the first of an event (same event id, at least once).
	Repeats int
	// ByTwoSenders: events delivered by more than one process.
	ByTwoSenders []string
	// CallsWithTwoEvents: one call announced as two events (never allowed).
	CallsWithTwoEvents []string
	BadSignatures      int
	Senders            map[string]int // deliveries per replica
}

// Tally counts what arrived for calls (call.ended deliveries).
func (in *Inbox) Tally(calls []string) Tally {
	in.mu.Lock()
	defer in.mu.Unlock()
	tl := Tally{BadSignatures: in.bad, Senders: map[string]int{}}
	events := map[string]map[string]bool{}  // call id -> event ids
	senders := map[string]map[string]bool{} // event id -> senders
	for _, d := range in.got {
		tl.Senders[d.Sender]++
		if senders[d.EventID] != nil {
			tl.Repeats++
		} else {
			senders[d.EventID] = map[string]bool{}
		}
		if !senders[d.EventID][d.Sender] && len(senders[d.EventID]) == 1 {
			tl.ByTwoSenders = append(tl.ByTwoSenders, d.EventID)
		}
		senders[d.EventID][d.Sender] = true
		if events[d.CallID] == nil {
			events[d.CallID] = map[string]bool{}
		}
		events[d.CallID][d.EventID] = true
	}
	for _, c := range calls {
		switch n := len(events[c]); {
		case n == 0:
			tl.Missing = append(tl.Missing, c)
		case n > 1:
			tl.CallsWithTwoEvents = append(tl.CallsWithTwoEvents, c)
		}
	}
	return tl
}

// WaitAll waits until every call has been delivered, or fails after timeout.
func (in *Inbox) WaitAll(t testing.TB, calls []string, timeout time.Duration) Tally {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tl := in.Tally(calls)
		if len(tl.Missing) == 0 {
			return tl
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls not delivered within %s (e.g. %v)", len(tl.Missing), len(calls), timeout, tl.Missing[:min(3, len(tl.Missing))])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// senderOf names the replica whose process owns the local TCP port (the client end of a
// delivery's connection), "" when none of this Env's replicas does.
func (e *Env) senderOf(port int) string {
	// /proc/net/tcp is read in pages, and a table that changes between two pages (other
	// connections opening and closing under load) may skip the row: look again.
	for range 5 {
		if name := e.senderOfOnce(port); name != "" {
			return name
		}
		time.Sleep(2 * time.Millisecond)
	}
	return ""
}

func (e *Env) senderOfOnce(port int) string {
	inode := socketInode(port)
	if inode == "" {
		return ""
	}
	e.mu.Lock()
	replicas := append([]*Replica(nil), e.replicas...)
	e.mu.Unlock()
	want := "socket:[" + inode + "]"
	for _, r := range replicas {
		fds := filepath.Join("/proc", strconv.Itoa(r.Pid()), "fd")
		entries, err := os.ReadDir(fds)
		if err != nil {
			continue
		}
		for _, ent := range entries {
			if link, err := os.Readlink(filepath.Join(fds, ent.Name())); err == nil && link == want {
				return r.Name
			}
		}
	}
	return ""
}

// socketInode finds the inode of the TCP socket whose local port is port (/proc/net/tcp*).
func socketInode(port int) string {
	hexPort := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && strings.HasSuffix(fields[1], hexPort) && fields[9] != "0" {
				f.Close()
				return fields[9]
			}
		}
		f.Close()
	}
	return ""
}
