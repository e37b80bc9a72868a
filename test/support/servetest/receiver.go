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
	senderOf func(conn tcpConn) string
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
//
// Bad signatures are counted from here: deliveries signed with the previous secret may still
// be under way when it changes (a rotation races the deliveries in flight).
func (in *Inbox) SetSecret(secret string) {
	in.mu.Lock()
	in.verifier = webhookverify.Verifier{Secret: secret}
	in.bad = 0
	in.mu.Unlock()
}

// SetDelay makes the receiver hold each answer back by d.
func (in *Inbox) SetDelay(d time.Duration) {
	in.mu.Lock()
	in.delay = d
	in.mu.Unlock()
}

type senderKey struct{}

// connSender names the process at the client end of one connection. A lookup can miss under
// load (/proc/net/tcp changes while it is read), so a miss is looked up again by the next
// request on the connection instead of naming none for all of them.
type connSender struct {
	conn     tcpConn
	senderOf func(conn tcpConn) string
	mu       sync.Mutex
	name     string
}

func (c *connSender) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.name == "" {
		c.name = c.senderOf(c.conn)
	}
	return c.name
}

// tcpConn is a connection to the receiver by its ports: the client's (the sender's local
// port) and the receiver's.
type tcpConn struct{ clientPort, serverPort int }

func newReceiver(senderOf func(conn tcpConn) string) *Receiver {
	r := &Receiver{inboxes: map[string]*Inbox{}, senderOf: senderOf}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		client, ok1 := c.RemoteAddr().(*net.TCPAddr)
		server, ok2 := c.LocalAddr().(*net.TCPAddr)
		if ok1 && ok2 {
			cs := &connSender{conn: tcpConn{clientPort: client.Port, serverPort: server.Port}, senderOf: r.senderOf}
			cs.get() // while the connection is new, before its sender can exit
			return context.WithValue(ctx, senderKey{}, cs)
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
	var sender string
	if cs, ok := req.Context().Value(senderKey{}).(*connSender); ok {
		sender = cs.get()
	}
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

// senderOf names the replica whose process owns the client end of conn (a
// delivery's connection), "" when none of this Env's replicas does.
func (e *Env) senderOf(conn tcpConn) string {
	// /proc/net/tcp is read in pages, and a table that changes between two pages (other
	// connections opening and closing under load) may skip the row: look again.
	for range 5 {
		if name := e.senderOfOnce(conn); name != "" {
			return name
		}
		time.Sleep(2 * time.Millisecond)
	}
	return ""
}

func (e *Env) senderOfOnce(conn tcpConn) string {
	inode := socketInode(conn)
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

// socketInode finds the inode of the client end of conn (/proc/net/tcp*): the socket whose
// local port is the client's and whose remote port is the receiver's. The local port alone
// is not enough: Linux gives one local port to connections to different destinations.
func socketInode(conn tcpConn) string {
	local, remote := fmt.Sprintf(":%04X", conn.clientPort), fmt.Sprintf(":%04X", conn.serverPort)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && strings.HasSuffix(fields[1], local) && strings.HasSuffix(fields[2], remote) && fields[9] != "0" {
				f.Close()
				return fields[9]
			}
		}
		f.Close()
	}
	return ""
}
