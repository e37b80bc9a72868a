package store

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// IsUnavailable reports whether err means the database could not be reached or dropped the
// connection (a restart, a failover, a network fault, no free connection in time), rather
// than that the request was wrong. The API answers such errors 503 with Retry-After.
func IsUnavailable(err error) bool {
	// A caller that gave up (the client went away) is not the database's fault.
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableSQLState(pgErr.Code)
	}
	if connectionLost(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// unavailableSQLState: class 08 (connection exception), the server shutting down or starting
// (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now) and too many clients.
func unavailableSQLState(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300":
		return true
	}
	return len(code) == 5 && code[:2] == "08"
}

// connectionLost reports whether err came from a connection that is gone (the server closed
// it, was restarted, or the network dropped it), so every connection opened before may be too.
func connectionLost(err error) bool {
	// A request given up on (its context ended) says nothing about the connections; pgconn
	// reports one ended before sending as safe to retry, which is not a lost connection.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P01" || pgErr.Code == "57P02" || (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08")
	}
	var netErr net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &netErr) && !netErr.Timeout())
}

// poolResetTracer closes every pooled connection when a statement fails because its
// connection was lost. After a PostgreSQL restart every idle connection is dead, and without
// this each would fail one more request before the pool noticed; after it the next statement
// (and a retried read) gets a freshly dialled connection.
type poolResetTracer struct {
	pool atomic.Pointer[pgxpool.Pool]
}

func (t *poolResetTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t *poolResetTracer) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.check(data.Err)
}

func (t *poolResetTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *poolResetTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *poolResetTracer) TraceBatchEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	t.check(data.Err)
}

func (t *poolResetTracer) check(err error) {
	if err == nil || !connectionLost(err) {
		return
	}
	if p := t.pool.Load(); p != nil {
		p.Reset()
	}
}

// RetryRead runs read, an idempotent read, and runs it once more when it failed because the
// connection was lost (the tracer has then dropped the old connections, so the second run
// dials a fresh one). Writes are not retried this way: their outcome is unknown.
func RetryRead(ctx context.Context, read func(context.Context) error) error {
	err := read(ctx)
	if err == nil || !IsUnavailable(err) || ctx.Err() != nil {
		return err
	}
	return read(ctx)
}
