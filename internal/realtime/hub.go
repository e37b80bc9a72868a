package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gobwas/ws"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Limits bound what one client can cost; all are per replica.
type Limits struct {
	// ConnectionsPerAccount bounds the subscribed connections of one account (default 200);
	// past it a subscription gets pusher:error 4004 and the connection closes with 4004.
	ConnectionsPerAccount int
	// MessagesPerSecond is the sustained rate of messages a connection may send (default 10,
	// burst 20, Pusher's own client-event limit); past it the connection closes with 4301.
	MessagesPerSecond float64
	MessageBurst      int
	// SubscriptionsPerMinute bounds subscription attempts of one connection (default 10); past
	// it an attempt gets pusher:error 4301 and is ignored.
	SubscriptionsPerMinute int
	// SendBuffer is how many events may wait for a slow reader (default 256); past it the
	// connection closes with 4100 and the client reconnects after a back-off.
	SendBuffer int
}

func (l *Limits) defaults() {
	if l.ConnectionsPerAccount == 0 {
		l.ConnectionsPerAccount = 200
	}
	if l.MessagesPerSecond == 0 {
		l.MessagesPerSecond = 10
	}
	if l.MessageBurst == 0 {
		l.MessageBurst = 20
	}
	if l.SubscriptionsPerMinute == 0 {
		l.SubscriptionsPerMinute = 10
	}
	if l.SendBuffer == 0 {
		l.SendBuffer = 256
	}
}

// Config configures a Hub.
type Config struct {
	Signer Signer
	Store  store.Realtime
	// DatabaseURL is where the listener LISTENs (its own connection, outside the pool).
	DatabaseURL     string
	Clock           clock.WithTicker
	Log             logr.Logger
	Limits          Limits
	ActivityTimeout time.Duration // sent to clients; default 120 s as Pusher's
	PongTimeout     time.Duration // default 30 s
}

// Hub serves WebSocket connections on one replica and fans the account's events out to them.
type Hub struct {
	cfg Config

	// listening is closed once the listener first LISTENs: subscriptions wait for it, so
	// none starts before its events can be heard.
	listening     chan struct{}
	listeningOnce sync.Once

	mu        sync.RWMutex
	conns     map[*conn]struct{}
	byAccount map[int64]map[*conn]struct{}
}

// NewHub builds a hub; Start runs its listener.
func NewHub(cfg Config) *Hub {
	cfg.Limits.defaults()
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.ActivityTimeout == 0 {
		cfg.ActivityTimeout = 120 * time.Second
	}
	if cfg.PongTimeout == 0 {
		cfg.PongTimeout = 30 * time.Second
	}
	return &Hub{cfg: cfg, listening: make(chan struct{}), conns: map[*conn]struct{}{}, byAccount: map[int64]map[*conn]struct{}{}}
}

// NeedLeaderElection: every replica serves its own connections.
func (h *Hub) NeedLeaderElection() bool { return false }

// Start listens for events and watches idle connections until ctx ends, then closes every
// connection with 4200 so clients reconnect (to another replica) at once.
func (h *Hub) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.listen(ctx) }()
	go func() { defer wg.Done(); h.sweep(ctx) }()
	wg.Wait()
	h.mu.RLock()
	for c := range h.conns {
		c.close(CloseReconnect, "server shutting down", nil)
	}
	h.mu.RUnlock()
	return nil
}

// Connections is the number of open connections (for tests and benchmarks).
func (h *Hub) Connections() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.conns)
}

// Subscribers is the number of connections subscribed to the account's channel.
func (h *Hub) Subscribers(accountID int64) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.byAccount[accountID])
}

// ServeHTTP upgrades /app/<key>?protocol=7 to the protocol.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/app/")
	closeCode, closeReason := 0, ""
	switch {
	case !ok || strings.Contains(key, "/"):
		closeCode, closeReason = ClosePathNotFound, "Connect to /app/<key>."
	case key != h.cfg.Signer.Key:
		closeCode, closeReason = CloseAppNotFound, "No app with key "+key+"."
	default:
		closeCode, closeReason = checkProtocol(r.URL.Query().Get("protocol"))
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUpgradeRequired)
		_, _ = w.Write([]byte(`{"message":"Connect with a WebSocket client (Upgrade: websocket)."}` + "\n"))
		return
	}
	// Any web page may connect (no Origin check): subscriptions are authorised by
	// signatures, not cookies. The upgrader clears the server's request deadlines.
	nc, rw, _, err := ws.HTTPUpgrader{Timeout: 5 * time.Second}.Upgrade(r, w)
	if err != nil {
		if nc != nil {
			_ = nc.Close() // the upgrader has answered the handshake
		}
		return
	}
	// net/http's 4 KiB read buffer is kept only if the client wrote ahead of the handshake.
	src := io.Reader(rw.Reader)
	if rw.Reader.Buffered() == 0 {
		src = bufio.NewReaderSize(nc, readBufferSize)
	}
	c := h.newConn(nc)
	if closeCode != 0 {
		c.close(closeCode, closeReason, errorMessage(closeCode, closeReason))
	} else {
		h.mu.Lock()
		h.conns[c] = struct{}{}
		h.mu.Unlock()
	}
	// The socket is served on a goroutine of its own, so net/http's request and connection
	// state are released while it stays open.
	ctx := context.WithoutCancel(r.Context())
	go func() {
		defer h.remove(c)
		c.serve(ctx, src)
	}()
}

func (h *Hub) remove(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	h.unsubscribeLocked(c)
}

func (h *Hub) unsubscribeLocked(c *conn) {
	if c.sub == nil {
		return
	}
	if set := h.byAccount[c.sub.accountID]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(h.byAccount, c.sub.accountID)
		}
	}
	c.sub = nil
}

// subscribeLocked adds c to the account's subscribers unless the account is at its limit.
func (h *Hub) subscribe(c *conn, s *subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.byAccount[s.accountID]
	if len(set) >= h.cfg.Limits.ConnectionsPerAccount {
		return false
	}
	if set == nil {
		set = map[*conn]struct{}{}
		h.byAccount[s.accountID] = set
	}
	h.unsubscribeLocked(c)
	c.sub = s
	set[c] = struct{}{}
	return true
}

// Publish sends an event to the account's subscribers on this replica.
func (h *Hub) Publish(accountID int64, event string, data json.RawMessage) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var frame []byte
	for c := range h.byAccount[accountID] {
		if frame == nil {
			frame = textFrame(outgoing(event, c.sub.channel, data))
		}
		c.enqueueFrame(frame)
	}
}

// endSubscriptions ends the subscriptions match selects at once (no event is queued to them
// after this) and closes their connections with 4009.
func (h *Hub) endSubscriptions(match func(*subscription) bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.byAccount {
		for c := range set {
			if match(c.sub) {
				h.unsubscribeLocked(c)
				c.close(CloseUnauthorized, reason, errorMessage(ErrorCodeUnauthorized, reason))
			}
		}
	}
}

const revokedReason = "The API key that authorised this subscription was revoked or its user left the account."

// RevokeKey ends the subscriptions the key authorised.
func (h *Hub) RevokeKey(keyID int64) {
	h.endSubscriptions(func(s *subscription) bool { return s.keyID == keyID }, revokedReason)
}

// RevokeUser ends the subscriptions the user's keys authorised.
func (h *Hub) RevokeUser(userID int64) {
	h.endSubscriptions(func(s *subscription) bool { return s.userID == userID }, revokedReason)
}

// recheck ends subscriptions whose key is no longer live or whose account the Integrations
// gate now refuses (after the listener reconnects, when a notification may have been missed).
func (h *Hub) recheck(ctx context.Context) error {
	h.mu.RLock()
	seen := map[int64]bool{}
	var keys, accounts []int64
	for account, set := range h.byAccount {
		accounts = append(accounts, account)
		for c := range set {
			if !seen[c.sub.keyID] {
				seen[c.sub.keyID] = true
				keys = append(keys, c.sub.keyID)
			}
		}
	}
	h.mu.RUnlock()
	if len(keys) == 0 {
		return nil
	}
	live, err := h.cfg.Store.LiveRealtimeKeys(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range live {
		delete(seen, k)
	}
	h.endSubscriptions(func(s *subscription) bool { return seen[s.keyID] }, revokedReason)
	return h.recheckAccounts(ctx, accounts)
}

// recheckAccounts ends the subscriptions of those accounts the Integrations gate refuses now
// (paused, or without the add-on), as /v1/realtime/auth would refuse them.
func (h *Hub) recheckAccounts(ctx context.Context, accountIDs []int64) error {
	gates, err := h.cfg.Store.RealtimeAccountGates(ctx, accountIDs)
	if err != nil {
		return err
	}
	refused := map[int64]string{}
	for _, id := range accountIDs {
		refused[id] = plans.ReasonAccountInactive // an account that no longer exists
	}
	for _, g := range gates {
		if reason := plans.IntegrationsGate(g.Plan, g.Addons, g.Status, g.IntegrationsDisabled); reason != "" {
			refused[g.AccountID] = reason
		} else {
			delete(refused, g.AccountID)
		}
	}
	for id, reason := range refused {
		h.endSubscriptions(func(s *subscription) bool { return s.accountID == id },
			"The account may no longer use Integrations ("+reason+"): the live channel is closed.")
	}
	return nil
}

// sweep pings idle connections and closes those that do not answer; it also drops unused grants.
func (h *Hub) sweep(ctx context.Context) {
	ticker := h.cfg.Clock.NewTicker(time.Second)
	defer ticker.Stop()
	lastPrune := h.cfg.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		now := h.cfg.Clock.Now()
		h.mu.RLock()
		for c := range h.conns {
			c.checkIdle(now)
		}
		h.mu.RUnlock()
		if now.Sub(lastPrune) >= time.Minute {
			lastPrune = now
			if _, err := h.cfg.Store.PruneRealtimeGrants(ctx, now.Add(-10*time.Minute)); err != nil && ctx.Err() == nil {
				h.cfg.Log.Error(err, "prune realtime grants")
			}
		}
	}
}

// subscription is a connection's authorised channel.
type subscription struct {
	channel   string
	accountID int64
	keyID     int64
	userID    int64
}

func (h *Hub) newConn(nc net.Conn) *conn {
	now := h.cfg.Clock.Now()
	return &conn{hub: h, nc: nc, socketID: newSocketID(), closed: make(chan struct{}), lastHeard: now,
		limiter:   rate.NewLimiter(rate.Limit(h.cfg.Limits.MessagesPerSecond), h.cfg.Limits.MessageBurst),
		subWindow: now}
}

// errNotFound is store.ErrNotFound, named for readability below.
var errNotFound = store.ErrNotFound

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }
