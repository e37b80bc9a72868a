package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/switchboard-dev/switchboard/internal/ingest"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
)

// prepared is what Run opens before it starts anything slow (migrations, informers, the
// leader election), so a missing piece stops the process at once with one clear error.
type prepared struct {
	api        net.Listener
	platform   net.Listener // nil when ingestion is off
	probes     net.Listener // nil when the probes are off
	recordings recordingstore.Store
}

// closeListeners releases the ports; the servers close them too once they run, and
// closing twice is harmless.
func (p *prepared) closeListeners() {
	for _, ln := range []net.Listener{p.api, p.platform, p.probes} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// close releases everything prepare opened, when serve stops before it started.
func (p *prepared) close() {
	p.closeListeners()
	if c, ok := p.recordings.(io.Closer); ok {
		_ = c.Close()
	}
}

// prepare checks the settings serve cannot run without and opens the listeners.
func prepare(o *Options) (*prepared, error) {
	if o.DatabaseURL == "" {
		return nil, errors.New("no database: set --database-url or DATABASE_URL")
	}
	if len(o.LinkSigningKey) < 32 {
		return nil, errors.New("the recording link signing key must be at least 32 bytes: set --link-signing-key-file or SWITCHBOARD_LINK_SIGNING_KEY")
	}
	p := &prepared{}
	var err error
	local := o.Recordings.Backend == "" || o.Recordings.Backend == recordingstore.BackendLocal
	if p.recordings, err = recordingstore.New(o.Recordings); err != nil {
		if local && o.Recordings.Dir != "" {
			return nil, fmt.Errorf("the recordings directory %s cannot be used (--recordings-dir): %w", o.Recordings.Dir, rootCause(err))
		}
		return nil, err
	}
	if local {
		if err := checkWritable(o.Recordings.Dir); err != nil {
			p.close()
			return nil, err
		}
	}
	if s3, ok := p.recordings.(*recordingstore.S3); ok {
		// A bucket that does not exist is a setting to fix, not an outage: refuse to start.
		// One that cannot be reached now may come back: recordings answer 503 meanwhile.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s3.CheckBucket(ctx)
		cancel()
		switch {
		case errors.Is(err, recordingstore.ErrNoBucket):
			p.close()
			return nil, fmt.Errorf("%w: create it, or name another with --s3-bucket", err)
		case err != nil:
			o.Log.Info("WARNING: the recording store cannot be reached; recordings are unavailable until it can", "error", err.Error())
		}
	}
	if p.api, err = listen("the v1 API", "--api-bind-address", o.APIAddr); err != nil {
		p.close()
		return nil, err
	}
	// The probes listen before anything runs too, so /readyz answers (503 until ready) as soon
	// as serve is up, never "connection refused".
	if o.ProbeAddr != "" && o.ProbeAddr != "0" {
		if p.probes, err = listen("the health probes", "--health-probe-bind-address", o.ProbeAddr); err != nil {
			p.close()
			return nil, err
		}
	}
	if o.PlatformToken != "" {
		if o.PlatformAddr == "" {
			o.PlatformAddr = ingest.DefaultAddr
		}
		if p.platform, err = listen("the platform ingestion API", "--platform-bind-address", o.PlatformAddr); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// checkWritable proves the recordings directory takes new files (a read-only mount or a
// volume owned by another user is otherwise found only when the first recording arrives).
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".switchboard-write-check-*")
	if err != nil {
		return fmt.Errorf("the recordings directory %s is not writable (--recordings-dir): %w", dir, rootCause(err))
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

func listen(what, flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for %s on %s (%s): %w", what, addr, flag, rootCause(err))
	}
	return ln, nil
}

// rootCause drops the wrapping *net.OpError and *os.SyscallError repeat ("listen tcp
// 127.0.0.1:8080: bind: address already in use" becomes "address already in use").
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
