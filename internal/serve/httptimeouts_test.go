package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// startListener serves handler the way serve does (httpRunnable) with timeouts, on a real
// loopback port, and returns its address.
func startListener(t *testing.T, timeouts HTTPTimeouts, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := &httpRunnable{name: "test", addr: addr, handler: handler, log: logr.Discard(), timeouts: timeouts,
		ready: func() { close(ready) }}
	go func() { done <- r.Start(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("listener did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("listener stopped: %v", err)
		}
	})
	return addr
}

// closedAfter drains the connection until the server closes it (or 30 s pass) and says when.
func closedAfter(t *testing.T, conn net.Conn, start time.Time) (time.Duration, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after 30 s (read %q)", got)
	}
	return time.Since(start), string(got)
}

// A body sent at one byte a second is cut off within the read timeout.
func TestSlowBodyIsCutOffAtReadTimeout(t *testing.T) {
	const readTimeout = 2 * time.Second
	bodyRead := make(chan int, 1)
	addr := startListener(t, HTTPTimeouts{Read: readTimeout, Write: 10 * time.Second, Idle: 10 * time.Second},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodyRead <- len(b)
		}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /v1/contacts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() { // one byte a second, until the server stops taking them
		n := 0
		defer func() { sent <- n }()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n < 60 {
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
			n++
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	took, _ := closedAfter(t, conn, start)
	close(stop)
	got := <-bodyRead
	t.Logf("connection closed after %v; the handler had read %d body bytes, the client sent %d", took.Round(time.Millisecond), got, <-sent)
	if took > readTimeout+2*time.Second {
		t.Errorf("slow body held the connection for %v, want it cut off about %v after it started", took, readTimeout)
	}
	if got >= 60 {
		t.Errorf("the whole body was read (%d bytes); want it cut off", got)
	}
}

// A keep-alive connection with no next request is closed after the idle timeout, not before.
func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	const idle = time.Second
	addr := startListener(t, HTTPTimeouts{Read: 5 * time.Second, Write: 5 * time.Second, Idle: idle},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/me HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || resp.Close {
		t.Fatalf("first request: %d %q close=%v, want a kept-alive 200", resp.StatusCode, body, resp.Close)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	rest, err := io.ReadAll(br)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("idle connection still open after 30 s")
	}
	t.Logf("idle connection closed after %v", took.Round(time.Millisecond))
	if took < idle/2 || took > idle+2*time.Second || strings.TrimSpace(string(rest)) != "" {
		t.Errorf("idle connection closed after %v (read %q), want about %v", took, rest, idle)
	}
}

// The server's timeouts: defaults for what is unset, and a write deadline that also covers
// reading the body (net/http starts it when the headers are read).
func TestHTTPTimeoutsServer(t *testing.T) {
	for _, c := range []struct {
		name                          string
		in                            HTTPTimeouts
		readHeader, read, write, idle time.Duration
	}{
		{"defaults", HTTPTimeouts{}, 10 * time.Second, 30 * time.Second, 90 * time.Second, 2 * time.Minute},
		{"set", HTTPTimeouts{ReadHeader: time.Second, Read: 2 * time.Second, Write: 3 * time.Second, Idle: 4 * time.Second},
			time.Second, 2 * time.Second, 5 * time.Second, 4 * time.Second},
		{"platform read", HTTPTimeouts{Read: DefaultPlatformReadTimeout}, 10 * time.Second, 2 * time.Minute, 3 * time.Minute, 2 * time.Minute},
	} {
		srv := c.in.server(http.NotFoundHandler())
		if srv.ReadHeaderTimeout != c.readHeader || srv.ReadTimeout != c.read || srv.WriteTimeout != c.write || srv.IdleTimeout != c.idle {
			t.Errorf("%s: header %v read %v write %v idle %v; want %v %v %v %v", c.name, srv.ReadHeaderTimeout, srv.ReadTimeout,
				srv.WriteTimeout, srv.IdleTimeout, c.readHeader, c.read, c.write, c.idle)
		}
	}
}
