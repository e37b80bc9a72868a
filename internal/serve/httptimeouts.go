package serve

import (
	"net/http"
	"time"
)

// HTTPTimeouts bound how long a client may hold the public and platform listeners, so slow
// or idle clients cannot tie up connections (and their goroutines) for ever. Zero fields take
// the defaults below.
//
// Routes that answer for longer than Write do so explicitly: the recording audio route
// extends its write deadline chunk by chunk (apiserver/media.go). A handler that hijacks its
// connection (WebSockets) inherits whatever read and write deadlines the server had set on it
// and must set or clear its own at once (net/http's Hijacker contract); Idle does not apply
// to it, since the server no longer owns the connection.
type HTTPTimeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included (a body sent a byte a second is cut off).
	Read time.Duration
	// Write bounds writing a response once the request has been read. (net/http starts its
	// write deadline when the headers are read, so the server's WriteTimeout is Read+Write.)
	Write time.Duration
	// Idle is how long a keep-alive connection may wait for its next request.
	Idle time.Duration
}

// Defaults of the serve flags (internal/cli/serve.go).
const (
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = 30 * time.Second
	DefaultPlatformReadTimeout = 2 * time.Minute // reports carry up to ~27 MiB of audio
	DefaultWriteTimeout        = 60 * time.Second
	DefaultIdleTimeout         = 2 * time.Minute
)

func (t HTTPTimeouts) withDefaults() HTTPTimeouts {
	orDefault := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	orDefault(&t.ReadHeader, DefaultReadHeaderTimeout)
	orDefault(&t.Read, DefaultReadTimeout)
	orDefault(&t.Write, DefaultWriteTimeout)
	orDefault(&t.Idle, DefaultIdleTimeout)
	return t
}

// server is an http.Server for handler with these timeouts.
func (t HTTPTimeouts) server(handler http.Handler) *http.Server {
	t = t.withDefaults()
	return &http.Server{Handler: handler, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Read + t.Write, IdleTimeout: t.Idle}
}
