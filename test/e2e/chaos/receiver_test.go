package chaos

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/api/webhookverify"
)

// slowAnswer is how long a slow answer takes: well within the sender's 10 s timeout.
const slowAnswer = 3 * time.Second

// receiver is one account's HTTPS webhook receiver, on an address of its own so that an
// outage takes it off the network (connections refused) while the others answer. It
// verifies every signature. A flapping receiver answers the first arrival of each event with
// the next of its seeded answers and every later arrival with 200, so a flapped delivery
// succeeds at its first retry, a minute later, within the run.
type receiver struct {
	account int
	clk     clock.PassiveClock

	mu       sync.Mutex
	verifier webhookverify.Verifier
	addr     string
	servers  []*httptest.Server // the live one last; earlier ones were taken down
	down     bool
	flaps    []Answer // nil: never flaps
	flapping bool
	next     int             // index of the next seeded answer
	arrived  map[string]bool // event ids seen
	answers  map[Answer]int
	got      []Receipt
	bad      int
}

func newReceiver(account int, clk clock.PassiveClock, flaps []Answer) (*receiver, error) {
	r := &receiver{account: account, clk: clk, flaps: flaps, flapping: flaps != nil,
		arrived: map[string]bool{}, answers: map[Answer]int{}}
	if err := r.listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return r, nil
}

// listen starts a server on addr; after an outage it is the same address, which another
// process may hold for a moment (then try again).
func (r *receiver) listen(addr string) error {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by an outage
	srv.StartTLS()                                   // httptest's certificate, the one servetest's CA file holds
	r.mu.Lock()
	r.addr = ln.Addr().String()
	r.servers = append(r.servers, srv)
	r.down = false
	r.mu.Unlock()
	return nil
}

func (r *receiver) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "https://" + r.addr + "/hook"
}

func (r *receiver) setSecret(secret string) {
	r.mu.Lock()
	r.verifier = webhookverify.Verifier{Secret: secret}
	r.mu.Unlock()
}

// Down takes the receiver off the network: it stops listening and drops its connections, so
// attempts in flight fail and new ones are refused.
func (r *receiver) Down() {
	// Under the lock: an answer is either sent in full before the connections drop, or not
	// recorded (serve checks down under it).
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	srv := r.servers[len(r.servers)-1]
	_ = srv.Listener.Close()
	srv.CloseClientConnections()
}

// Up listens again on the same address.
func (r *receiver) Up() error {
	r.mu.Lock()
	addr := r.addr
	r.mu.Unlock()
	return r.listen(addr)
}

// StopFlapping makes every later answer 200.
func (r *receiver) StopFlapping() {
	r.mu.Lock()
	r.flapping = false
	r.mu.Unlock()
}

func (r *receiver) Close() {
	r.mu.Lock()
	servers := r.servers
	r.mu.Unlock()
	for _, s := range servers {
		s.CloseClientConnections()
		s.Close()
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	verifier := r.verifier
	r.mu.Unlock()
	body, err := verifier.Request(req)
	if err != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var p struct {
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	_ = json.Unmarshal(body, &p)
	event := req.Header.Get(webhookverify.HeaderDelivery)

	answer := OK
	r.mu.Lock()
	if r.flapping && !r.arrived[event] {
		if r.next < len(r.flaps) {
			answer = r.flaps[r.next]
		}
		r.next++
		r.answers[answer]++
	}
	r.arrived[event] = true
	r.mu.Unlock()

	switch answer {
	case ServerError:
		http.Error(w, "flapping", http.StatusInternalServerError)
		return
	case Timeout:
		// Held until the sender gives up (its 10 s timeout), never answered.
		select {
		case <-req.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	case Slow:
		select {
		case <-req.Context().Done():
		case <-time.After(slowAnswer):
		}
	}
	// Only an answer that reaches the sender counts as received: it is written and flushed
	// before it is recorded, and never while the receiver is down.
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Context().Err() != nil || r.down {
		return
	}
	w.WriteHeader(http.StatusNoContent)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	r.got = append(r.got, Receipt{Account: r.account, EventID: event, CallID: p.Call.ID, At: r.clk.Now()})
}

// Receipts is a copy of what the receiver accepted.
func (r *receiver) Receipts() []Receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Receipt(nil), r.got...)
}

// Flapped counts the first arrivals answered with each answer.
func (r *receiver) Flapped() map[Answer]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[Answer]int{}
	for a, n := range r.answers {
		out[a] = n
	}
	return out
}

// BadSignatures counts requests whose signature did not verify.
func (r *receiver) BadSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}
