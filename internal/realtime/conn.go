package realtime

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"
)

// writeTimeout bounds one frame's write to a client.
const writeTimeout = 10 * time.Second

// conn is one client connection.
type conn struct {
	hub      *Hub
	ws       *websocket.Conn
	socketID string
	send     chan []byte

	closeOnce   sync.Once
	closing     chan struct{}
	closeCode   int
	closeReason string
	closeNotice []byte

	mu        sync.Mutex
	lastHeard time.Time
	pingSent  time.Time

	// sub is guarded by hub.mu.
	sub *subscription

	// Touched by the reading goroutine only.
	limiter   *rate.Limiter
	subWindow time.Time
	subCount  int
}

// enqueue queues a message; a reader too slow to keep up is closed with 4100.
func (c *conn) enqueue(msg []byte) {
	select {
	case c.send <- msg:
	default:
		c.close(CloseOverCapacity, "Too many events are waiting: the client reads too slowly.", nil)
	}
}

// close ends the connection with code, after notice (a pusher:error) when given.
func (c *conn) close(code int, reason string, notice []byte) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeReason, c.closeNotice = code, reason, notice
		close(c.closing)
	})
}

func (c *conn) checkIdle(now time.Time) {
	c.mu.Lock()
	action := decideIdle(c.lastHeard, c.pingSent, now, c.hub.cfg.ActivityTimeout, c.hub.cfg.PongTimeout)
	if action == idlePing {
		c.pingSent = now
	}
	c.mu.Unlock()
	switch action {
	case idlePing:
		c.enqueue(outgoing("pusher:ping", "", []byte("{}")))
	case idleClose:
		c.close(ClosePongTimeout, "No pong or message within the activity timeout.", nil)
	}
}

// serve runs the connection until either side ends it.
func (c *conn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	established, _ := json.Marshal(map[string]any{"socket_id": c.socketID,
		"activity_timeout": int(c.hub.cfg.ActivityTimeout / time.Second)})
	c.send <- outgoing("pusher:connection_established", "", established)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop(ctx)
	}()
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			break
		}
		c.handle(ctx, b)
	}
	c.close(int(websocket.StatusNormalClosure), "", nil)
	cancel()
	<-done
}

func (c *conn) writeLoop(ctx context.Context) {
	write := func(msg []byte) bool {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return c.ws.Write(wctx, websocket.MessageText, msg) == nil
	}
	for {
		// A connection being closed sends nothing more (a revoked subscription's queue).
		select {
		case <-c.closing:
		default:
			select {
			case msg := <-c.send:
				if !write(msg) {
					c.close(CloseReconnect, "", nil)
					_ = c.ws.CloseNow()
					return
				}
				continue
			case <-c.closing:
			case <-ctx.Done():
				_ = c.ws.CloseNow()
				return
			}
		}
		if c.closeNotice != nil {
			write(c.closeNotice)
		}
		_ = c.ws.Close(websocket.StatusCode(c.closeCode), c.closeReason)
		return
	}
}

// handle answers one client message.
func (c *conn) handle(ctx context.Context, b []byte) {
	now := c.hub.cfg.Clock.Now()
	c.mu.Lock()
	c.lastHeard = now
	c.mu.Unlock()
	if !c.limiter.AllowN(now, 1) {
		c.close(CloseRateLimited, "Too many messages: at most "+strconv.FormatFloat(c.hub.cfg.Limits.MessagesPerSecond, 'f', -1, 64)+" a second.", nil)
		return
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil || m.Event == "" {
		c.enqueue(errorMessage(0, "Invalid message: send JSON with an event, e.g. {\"event\":\"pusher:ping\",\"data\":{}}."))
		return
	}
	switch {
	case m.Event == "pusher:ping":
		c.enqueue(outgoing("pusher:pong", "", []byte("{}")))
	case m.Event == "pusher:pong":
	case m.Event == "pusher:subscribe":
		c.subscribe(ctx, m.Data, now)
	case m.Event == "pusher:unsubscribe":
		var d subscribeData
		if decodeData(m.Data, &d) == nil {
			c.hub.mu.Lock()
			if c.sub != nil && c.sub.channel == d.Channel {
				c.hub.unsubscribeLocked(c)
			}
			c.hub.mu.Unlock()
		}
	case strings.HasPrefix(m.Event, "client-"):
		c.enqueue(errorMessage(0, "Client events are not accepted: the account channel is read-only."))
	default:
		c.enqueue(errorMessage(0, "Unsupported event "+strconv.Quote(m.Event)+"."))
	}
}

func (c *conn) subscribe(ctx context.Context, data json.RawMessage, now time.Time) {
	if now.Sub(c.subWindow) >= time.Minute {
		c.subWindow, c.subCount = now, 0
	}
	c.subCount++
	if c.subCount > c.hub.cfg.Limits.SubscriptionsPerMinute {
		c.enqueue(errorMessage(ErrorCodeRateLimited, "Too many subscription attempts: at most "+
			strconv.Itoa(c.hub.cfg.Limits.SubscriptionsPerMinute)+" a minute."))
		return
	}
	var d subscribeData
	if err := decodeData(data, &d); err != nil || d.Channel == "" {
		c.enqueue(errorMessage(0, "Invalid subscription: data needs channel and auth."))
		return
	}
	if ChannelAccount(d.Channel) == "" {
		c.refuse(d.Channel, "No such channel: subscribe to the private-account.<account id> channel GET /me names.")
		return
	}
	c.hub.mu.RLock()
	already := c.sub != nil && c.sub.channel == d.Channel
	c.hub.mu.RUnlock()
	if already {
		c.enqueue(outgoing("pusher_internal:subscription_succeeded", d.Channel, []byte("{}")))
		return
	}
	if !c.hub.cfg.Signer.Verify(c.socketID, d.Channel, d.Auth) {
		c.refuse(d.Channel, "Invalid signature: get auth for this socket_id and channel from POST /v1/realtime/auth.")
		return
	}
	select {
	case <-c.hub.listening:
	case <-c.hub.cfg.Clock.After(5 * time.Second):
		c.close(CloseReconnect, "The service is starting; reconnect.", nil)
		return
	case <-ctx.Done():
		return
	}
	// The signature proves /v1/realtime/auth allowed it; the grant says which key, and that
	// the key is still live.
	grant, err := c.hub.cfg.Store.TakeRealtimeGrant(ctx, c.socketID, d.Channel)
	if isNotFound(err) {
		c.refuse(d.Channel, "Not authorised: the key that signed this subscription was revoked, its user left, or it was already used.")
		return
	}
	if err != nil {
		c.hub.cfg.Log.Error(err, "read a realtime grant")
		c.close(CloseReconnect, "The service is unavailable; reconnect.", nil)
		return
	}
	if !c.hub.subscribe(c, &subscription{channel: d.Channel, accountID: grant.AccountID, keyID: grant.KeyID, userID: grant.UserID}) {
		msg := "Over quota: the account has " + strconv.Itoa(c.hub.cfg.Limits.ConnectionsPerAccount) + " live connections."
		c.close(CloseOverQuota, msg, errorMessage(CloseOverQuota, msg))
		return
	}
	c.enqueue(outgoing("pusher_internal:subscription_succeeded", d.Channel, []byte("{}")))
}

// refuse answers a subscription that may not go ahead, with pusher:error 4009 and the
// channel's pusher:subscription_error (what pusher-js reports to the app).
func (c *conn) refuse(channel, message string) {
	c.enqueue(errorMessage(ErrorCodeUnauthorized, message))
	body, _ := json.Marshal(map[string]any{"type": "AuthError", "error": message, "status": 403})
	c.enqueue(outgoing("pusher:subscription_error", channel, body))
}
