package realtime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// pipeConn is a conn of a hub (without a listener) whose socket is one end of an in-memory
// pipe; the client reads the other end.
func pipeConn(t *testing.T, limits Limits) (*conn, *countingConn, *bufio.Reader) {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	counted := &countingConn{Conn: server}
	h := NewHub(Config{Limits: limits})
	return h.newConn(counted), counted, bufio.NewReader(client)
}

// readFrame reads one frame as a client does (the hub's frames are small and unmasked).
func readFrame(t *testing.T, r io.Reader) ws.Frame {
	t.Helper()
	f, err := decodeFrame(r)
	if err != nil {
		t.Fatalf("read a frame: %v", err)
	}
	return f
}

func decodeFrame(r io.Reader) (ws.Frame, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return ws.Frame{}, err
	}
	if h.Length > 64<<10 {
		return ws.Frame{}, fmt.Errorf("a %d-byte frame", h.Length)
	}
	f := ws.Frame{Header: h, Payload: make([]byte, h.Length)}
	_, err = io.ReadFull(r, f.Payload)
	return f, err
}

func TestWaitingFramesAreWrittenTogetherInOrder(t *testing.T) {
	c, counted, client := pipeConn(t, Limits{SendBuffer: 1000})
	// The pipe blocks every write until the client reads, so the frames queued meanwhile
	// wait and must go out in one write.
	const n = 200
	frame := textFrame([]byte(`{"event":"shared"}`)) // one encoding, as Publish shares it
	for i := range n {
		if i%2 == 0 {
			c.enqueueFrame(frame)
		} else {
			c.enqueue(fmt.Appendf(nil, `{"n":%d}`, i))
		}
	}
	for i := range n {
		want := []byte(`{"event":"shared"}`)
		if i%2 == 1 {
			want = fmt.Appendf(nil, `{"n":%d}`, i)
		}
		if f := readFrame(t, client); f.Header.OpCode != ws.OpText || f.Header.Masked || !bytes.Equal(f.Payload, want) {
			t.Fatalf("frame %d: %+v %q, want an unmasked text frame %q", i, f.Header, f.Payload, want)
		}
	}
	// The first write may hold one frame (the flusher starts at the first); the rest wait
	// for it and go out together.
	if w := counted.writes.Load(); w > 3 {
		t.Fatalf("%d frames took %d writes", n, w)
	}
}

func TestClosingDropsWaitingFramesAndSendsTheNoticeAndCloseFrame(t *testing.T) {
	c, _, client := pipeConn(t, Limits{SendBuffer: 1000})
	// The pipe holds the flusher's first write until the client reads: what it has not
	// taken by the close is dropped, and nothing is queued after it.
	for range 10 {
		c.enqueue([]byte(`{"event":"before"}`))
	}
	c.close(CloseUnauthorized, "revoked", errorMessage(ErrorCodeUnauthorized, "revoked"))
	c.enqueue([]byte(`{"event":"after close"}`))
	f := readFrame(t, client)
	for before := 0; string(f.Payload) == `{"event":"before"}`; before++ {
		if before == 10 {
			t.Fatal("more frames than were queued")
		}
		f = readFrame(t, client)
	}
	if f.Header.OpCode != ws.OpText || !bytes.Contains(f.Payload, []byte(`"pusher:error"`)) {
		t.Fatalf("after closing: %+v %q, want the pusher:error notice", f.Header, f.Payload)
	}
	f = readFrame(t, client)
	code, reason := ws.ParseCloseFrameData(f.Payload)
	if f.Header.OpCode != ws.OpClose || code != CloseUnauthorized || reason != "revoked" {
		t.Fatalf("then %+v %d %q, want close 4009", f.Header, code, reason)
	}
	select {
	case <-c.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection is not marked closed after its close frame")
	}
}

func TestASlowReaderIsClosedWith4100(t *testing.T) {
	c, _, client := pipeConn(t, Limits{SendBuffer: 4})
	for range 20 {
		c.enqueue([]byte(`{"event":"e"}`))
	}
	// Whatever was written before the queue overflowed, then the close frame.
	for {
		f := readFrame(t, client)
		if f.Header.OpCode == ws.OpClose {
			if code, _ := ws.ParseCloseFrameData(f.Payload); code != CloseOverCapacity {
				t.Fatalf("closed with %d, want 4100", code)
			}
			return
		}
	}
}

func TestCloseReasonsFitAControlFrame(t *testing.T) {
	long := string(bytes.Repeat([]byte("é"), 100)) // 200 bytes
	f, err := decodeFrame(bytes.NewReader(closeFrame(CloseAppNotFound, long)))
	if err != nil {
		t.Fatal(err)
	}
	code, reason := ws.ParseCloseFrameData(f.Payload)
	if code != CloseAppNotFound || len(f.Payload) > ws.MaxControlFramePayloadSize || ws.CheckCloseFrameData(code, reason) != nil {
		t.Fatalf("close frame of %d bytes, code %d, reason %q", len(f.Payload), code, reason)
	}
}
