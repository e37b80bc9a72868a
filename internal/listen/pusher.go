package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Pusher publishes no Go client library (pusher-http-go is the server side) and the
// third-party ones are unmaintained, so this is the small part of protocol 7 a subscriber
// needs, over the WebSocket library the service's tests already use.

// pusherMessage is one protocol frame; server frames carry data as a JSON string.
type pusherMessage struct {
	Event   string          `json:"event"`
	Channel string          `json:"channel,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// payload is the frame's data: the text inside the JSON string servers send, or the raw
// JSON when a server sent an object.
func (m pusherMessage) payload() ([]byte, error) {
	if len(m.Data) > 0 && m.Data[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Data, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	return m.Data, nil
}

// pongTimeout is how long the client waits for pusher:pong after its own ping.
const pongTimeout = 30 * time.Second

// ClosedError is a connection the server closed with a protocol close code.
type ClosedError struct {
	Code   int
	Reason string
}

func (e *ClosedError) Error() string {
	return fmt.Sprintf("closed by the server: %d %s", e.Code, e.Reason)
}

// Permanent reports whether the protocol says not to reconnect (codes 4000–4099: wrong app
// key, over quota, unauthorised).
func (e *ClosedError) Permanent() bool { return e.Code >= 4000 && e.Code < 4100 }

// RefusedError is a pusher:error answering the subscription (e.g. 4009, unauthorised).
type RefusedError struct {
	Code    int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the live channel refused the subscription (%d): %s", e.Code, e.Message)
}

// pusherConn is one connection to a Pusher protocol server.
type pusherConn struct {
	ws              *websocket.Conn
	socketID        string
	activityTimeout time.Duration
	frames          chan []byte
	readErr         error // set before frames is closed
	done            chan struct{}
	closeOnce       sync.Once
}

// dialPusher connects and reads pusher:connection_established.
func dialPusher(ctx context.Context, url string) (*pusherConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(1 << 20) // the body of a large event is sent whole
	c := &pusherConn{ws: ws, frames: make(chan []byte, 64), done: make(chan struct{})}
	// A reader of its own: coder/websocket closes a connection whose Read context ends, so
	// reads never carry the ping timer's deadline.
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				c.readErr = err
				close(c.frames)
				return
			}
			select {
			case c.frames <- b:
			case <-c.done: // closed while frames were waiting: nobody reads them
				return
			}
		}
	}()
	m, err := c.read(ctx, 15*time.Second)
	if err != nil {
		c.close()
		return nil, err
	}
	if m.Event != "pusher:connection_established" {
		c.close()
		return nil, fmt.Errorf("the live channel's first message was %s, not pusher:connection_established", m.Event)
	}
	var est struct {
		SocketID        string `json:"socket_id"`
		ActivityTimeout int    `json:"activity_timeout"`
	}
	if p, err := m.payload(); err != nil || json.Unmarshal(p, &est) != nil || est.SocketID == "" {
		c.close()
		return nil, fmt.Errorf("the live channel sent a malformed pusher:connection_established")
	}
	c.socketID = est.SocketID
	c.activityTimeout = time.Duration(est.ActivityTimeout) * time.Second
	if c.activityTimeout <= 0 {
		c.activityTimeout = 120 * time.Second
	}
	return c, nil
}

func (c *pusherConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
	})
}

var errNoMessage = errors.New("no message from the live channel in time")

// read waits up to wait for the next frame.
func (c *pusherConn) read(ctx context.Context, wait time.Duration) (pusherMessage, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return pusherMessage{}, ctx.Err()
	case <-t.C:
		return pusherMessage{}, errNoMessage
	case b, ok := <-c.frames:
		if !ok {
			if code := websocket.CloseStatus(c.readErr); code != -1 {
				var ce websocket.CloseError
				errors.As(c.readErr, &ce)
				return pusherMessage{}, &ClosedError{Code: int(code), Reason: ce.Reason}
			}
			return pusherMessage{}, c.readErr
		}
		var m pusherMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return pusherMessage{}, fmt.Errorf("the live channel sent a frame that is not JSON: %w", err)
		}
		return m, nil
	}
}

func (c *pusherConn) send(ctx context.Context, event string, data any) error {
	d, err := json.Marshal(data)
	if err != nil {
		return err
	}
	b, err := json.Marshal(pusherMessage{Event: event, Data: d})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.ws.Write(wctx, websocket.MessageText, b)
}

// subscribe sends pusher:subscribe with auth and waits for the server's answer.
func (c *pusherConn) subscribe(ctx context.Context, channel, auth string) error {
	if err := c.send(ctx, "pusher:subscribe", map[string]string{"channel": channel, "auth": auth}); err != nil {
		return err
	}
	for {
		m, err := c.read(ctx, 15*time.Second)
		if err != nil {
			return err
		}
		switch m.Event {
		case "pusher_internal:subscription_succeeded":
			return nil
		case "pusher:error":
			return refusal(m)
		case "pusher:ping":
			if err := c.send(ctx, "pusher:pong", struct{}{}); err != nil {
				return err
			}
		}
	}
}

func refusal(m pusherMessage) *RefusedError {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if p, err := m.payload(); err == nil {
		_ = json.Unmarshal(p, &e)
	}
	return &RefusedError{Code: e.Code, Message: e.Message}
}

// next returns the next event of the channel, answering the server's pings and pinging an
// otherwise silent server every activity timeout (a server that does not answer within
// pongTimeout is gone).
func (c *pusherConn) next(ctx context.Context, channel string) (event string, data []byte, err error) {
	wait, pinged := c.activityTimeout, false
	for {
		m, err := c.read(ctx, wait)
		switch {
		case errors.Is(err, errNoMessage) && !pinged:
			if err := c.send(ctx, "pusher:ping", struct{}{}); err != nil {
				return "", nil, err
			}
			wait, pinged = pongTimeout, true
			continue
		case errors.Is(err, errNoMessage):
			return "", nil, fmt.Errorf("the live channel did not answer a ping within %s", pongTimeout)
		case err != nil:
			return "", nil, err
		}
		wait, pinged = c.activityTimeout, false
		switch {
		case m.Event == "pusher:ping":
			if err := c.send(ctx, "pusher:pong", struct{}{}); err != nil {
				return "", nil, err
			}
		case m.Event == "pusher:error":
			// Not fatal by itself: a notice before a close frame, or a rate-limit warning.
			continue
		case m.Channel == channel && len(m.Event) > 0 && !isProtocolEvent(m.Event):
			p, err := m.payload()
			if err != nil {
				return "", nil, fmt.Errorf("the data of %s is not a JSON string: %w", m.Event, err)
			}
			return m.Event, p, nil
		}
	}
}

func isProtocolEvent(name string) bool {
	return strings.HasPrefix(name, "pusher:") || strings.HasPrefix(name, "pusher_internal:")
}
