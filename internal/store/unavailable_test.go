package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

func TestIsUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "x"}}
	for _, c := range []struct {
		name        string
		err         error
		unavailable bool
		lost        bool
	}{
		{"nil", nil, false, false},
		{"not found", ErrNotFound, false, false},
		{"no rows", pgx.ErrNoRows, false, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true, false},
		{"too many clients", &pgconn.PgError{Code: "53300"}, true, false},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true, true},
		{"wrapped admin shutdown", fmt.Errorf("list calls: %w", &pgconn.PgError{Code: "57P01"}), true, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true, true},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true, true},
		{"other network error", refused, true, true},
		{"closed pool", puddle.ErrClosedPool, true, false},
		{"deadline", fmt.Errorf("acquire: %w", context.DeadlineExceeded), true, false},
		{"client went away", context.Canceled, false, false},
		{"plain error", errors.New("boom"), false, false},
	} {
		if got := IsUnavailable(c.err); got != c.unavailable {
			t.Errorf("%s: IsUnavailable = %v, want %v", c.name, got, c.unavailable)
		}
		if c.err != nil {
			if got := connectionLost(c.err); got != c.lost {
				t.Errorf("%s: connectionLost = %v, want %v", c.name, got, c.lost)
			}
		}
	}
}

// A read that fails because the connection was lost runs once more; other failures and
// successes run once.
func TestRetryRead(t *testing.T) {
	for _, c := range []struct {
		name  string
		errs  []error
		runs  int
		fails bool
	}{
		{"success", []error{nil}, 1, false},
		{"not found", []error{ErrNotFound}, 1, true},
		{"lost then fine", []error{io.ErrUnexpectedEOF, nil}, 2, false},
		{"lost twice", []error{io.ErrUnexpectedEOF, syscall.ECONNREFUSED}, 2, true},
	} {
		runs := 0
		err := RetryRead(context.Background(), func(context.Context) error {
			runs++
			return c.errs[runs-1]
		})
		if runs != c.runs || (err != nil) != c.fails {
			t.Errorf("%s: %d runs, err %v; want %d runs, failing %v", c.name, runs, err, c.runs, c.fails)
		}
	}
}
