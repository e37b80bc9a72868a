package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"golang.org/x/time/rate"
)

const (
	// writeTimeout bounds one write of a socket's waiting frames.
	writeTimeout = 10 * time.Second
	// closeWait is how long a socket the server closes waits for the client's close frame.
	closeWait = 5 * time.Second
	// readLimit is the protocol's 10 KB message limit.
	readLimit = 10 << 10
	// readBufferSize buffers a socket's reads: client messages are small and rare, and an
	// idle socket should hold little.
	readBufferSize = 512
	// writeBufferSize is the buffer a socket's frames are gathered into before one write.
	writeBufferSize = 16 << 10
)

// writers are the write buffers, lent to a socket only while it has frames to write.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferSize) }}

// conn is one client connection.
//
// Frames are encoded before they are queued (an event's frame once for all its subscribers:
// server frames are unmasked and uncompressed, so the bytes are the same on every socket). A
// flusher goroutine, started when the queue gets its first frame, writes every waiting frame
// through one buffer and flushes once when the queue is empty, so under load a socket's
// frames go out in few large writes, and an idle socket has neither a writing goroutine nor
// a write buffer.
type conn struct {
	hub      *Hub
	nc       net.Conn
	socketID string

	qmu      sync.Mutex
	queue    [][]byte // frames waiting to be written
	spare    [][]byte // the last written batch's array, reused for the next one
	flushing bool     // a flusher is running
	// closeCode is set once the connection is being closed: nothing more is queued, and
	// what waits is dropped (a revoked subscription's events) for the notice and close frame.
	closeCode   int
	closeReason string
	closeNotice []byte
	// closed is closed once the close frame is written or the socket failed.
	closed chan struct{}

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

// textFrame is msg as a server's text frame, ready to be written to any socket.
func textFrame(msg []byte) []byte { return ws.MustCompileFrame(ws.NewTextFrame(msg)) }

// closeFrame is a close frame; the reason is cut to what a control frame can carry.
func closeFrame(code int, reason string) []byte {
	const maxReason = 123 // 125 bytes of payload, less the code
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "")
	}
	return ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusCode(code), reason)))
}

// enqueue queues a message; a reader too slow to keep up is closed with 4100.
func (c *conn) enqueue(msg []byte) { c.enqueueFrame(textFrame(msg)) }

// enqueueFrame queues an encoded frame.
func (c *conn) enqueueFrame(frame []byte) {
	c.qmu.Lock()
	if c.closeCode != 0 {
		c.qmu.Unlock()
		return
	}
	if len(c.queue) >= c.hub.cfg.Limits.SendBuffer {
		c.qmu.Unlock()
		c.close(CloseOverCapacity, "Too many events are waiting: the client reads too slowly.", nil)
		return
	}
	if c.queue == nil {
		c.queue, c.spare = c.spare, nil
	}
	c.queue = append(c.queue, frame)
	start := !c.flushing
	c.flushing = true
	c.qmu.Unlock()
	if start {
		go c.flush()
	}
}

// close ends the connection with code, after notice (a pusher:error) when given.
func (c *conn) close(code int, reason string, notice []byte) {
	c.qmu.Lock()
	if c.closeCode != 0 {
		c.qmu.Unlock()
		return
	}
	c.closeCode, c.closeReason, c.closeNotice = code, reason, notice
	start := !c.flushing
	c.flushing = true
	c.qmu.Unlock()
	if start {
		go c.flush()
	}
}

// fail ends a connection whose socket broke: nothing more can be written to it.
func (c *conn) fail() {
	_ = c.nc.Close()
	c.close(CloseReconnect, "", nil)
}

// flush writes the queue until it is empty, or writes the close frame once the connection is
// being closed.
func (c *conn) flush() {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(c.nc)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
	for {
		c.qmu.Lock()
		batch, code := c.queue, c.closeCode
		c.queue = nil
		if code != 0 {
			// flushing stays true: nothing is written after the close frame.
			c.qmu.Unlock()
			c.writeClose(bw)
			return
		}
		if len(batch) == 0 {
			c.flushing = false
			c.qmu.Unlock()
			return
		}
		c.qmu.Unlock()
		if err := c.write(bw, batch...); err != nil {
			c.fail() // the next round's close frame fails at once
			continue
		}
		clear(batch)
		if cap(batch) <= 256 {
			c.qmu.Lock()
			c.spare = batch[:0]
			c.qmu.Unlock()
		}
	}
}

// write writes frames through bw with one flush.
func (c *conn) write(bw *bufio.Writer, frames ...[]byte) error {
	// Socket deadlines are the kernel's wall clock, not the injected one (a fake clock would
	// put them in the past).
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	for _, f := range frames {
		if _, err := bw.Write(f); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeClose writes the notice and the close frame, then gives the client closeWait to
// answer with its own close frame before the reader gives up.
func (c *conn) writeClose(bw *bufio.Writer) {
	defer close(c.closed)
	frames := [][]byte{closeFrame(c.closeCode, c.closeReason)}
	if c.closeNotice != nil {
		frames = [][]byte{textFrame(c.closeNotice), frames[0]}
	}
	if c.write(bw, frames...) != nil {
		_ = c.nc.Close()
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(closeWait))
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

// serve reads the client's frames until either side ends the connection, then closes it.
func (c *conn) serve(ctx context.Context, src io.Reader) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() { _ = c.nc.Close() }()
	established, _ := json.Marshal(map[string]any{"socket_id": c.socketID,
		"activity_timeout": int(c.hub.cfg.ActivityTimeout / time.Second)})
	c.enqueue(outgoing("pusher:connection_established", "", established))
	rd := &wsutil.Reader{Source: src, State: ws.StateServerSide, CheckUTF8: true, MaxMessageSize: readLimit}
	var peerClosed bool
	// Control frames between the fragments of a message.
	rd.OnIntermediate = func(h ws.Header, r io.Reader) error {
		if c.control(h, r) {
			peerClosed = true
			return io.EOF
		}
		return nil
	}
	for !peerClosed {
		h, err := rd.NextFrame()
		if err == nil && h.OpCode.IsControl() {
			peerClosed = c.control(h, rd)
			continue
		}
		var msg []byte
		if err == nil {
			msg, err = io.ReadAll(rd)
		}
		if peerClosed {
			break
		}
		if err != nil {
			c.readFailed(err)
			break
		}
		c.handle(ctx, msg)
	}
	<-c.closed
}

// control answers a control frame; it reports whether the client closed the connection.
func (c *conn) control(h ws.Header, r io.Reader) bool {
	payload, err := io.ReadAll(io.LimitReader(r, ws.MaxControlFramePayloadSize))
	if err != nil {
		c.fail()
		return true
	}
	switch h.OpCode {
	case ws.OpPing:
		c.enqueueFrame(ws.MustCompileFrame(ws.NewPongFrame(payload)))
	case ws.OpClose:
		// Echo the client's code, as RFC 6455 asks.
		code, _ := ws.ParseCloseFrameData(payload)
		if code.Empty() || code == ws.StatusNoStatusRcvd {
			code = ws.StatusNormalClosure
		}
		c.close(int(code), "", nil)
		return true
	}
	return false
}

// readFailed closes the connection after a read error: a broken rule of the WebSocket
// protocol gets its close code, a broken socket is just closed.
func (c *conn) readFailed(err error) {
	var protocolErr ws.ProtocolError
	switch {
	case errors.Is(err, wsutil.ErrMessageTooLarge), errors.Is(err, wsutil.ErrFrameTooLarge):
		c.close(int(ws.StatusMessageTooBig), "Messages are at most 10 KB.", nil)
	case errors.Is(err, wsutil.ErrInvalidUTF8):
		c.close(int(ws.StatusInvalidFramePayloadData), "Text must be UTF-8.", nil)
	case errors.As(err, &protocolErr):
		c.close(int(ws.StatusProtocolError), protocolErr.Error(), nil)
	default:
		c.fail()
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
