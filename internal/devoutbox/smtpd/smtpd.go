// Package smtpd is the development outbox's SMTP server (go-smtp): it accepts every message
// and keeps it in a devoutbox.Outbox. For `make run` on loopback only; it has no authentication.
package smtpd

import (
	"io"
	"net"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
)

// Server is a running SMTP server.
type Server struct {
	srv  *smtp.Server
	addr string
}

// Start listens on addr (host:port; a loopback address) and keeps what arrives in box until Close.
func Start(addr string, box *devoutbox.Outbox) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{box: box}, nil }))
	srv.Domain = "localhost"
	srv.MaxMessageBytes = devoutbox.MaxMessageBytes
	srv.MaxRecipients = 50
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	go func() { _ = srv.Serve(ln) }()
	return &Server{srv: srv, addr: ln.Addr().String()}, nil
}

// Addr is the server's address, host:port, for the service's --smtp-addr.
func (s *Server) Addr() string { return s.addr }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

type session struct {
	box  *devoutbox.Outbox
	from string
	to   []string
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	m, err := devoutbox.Parse(r)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "unreadable message: " + err.Error()}
	}
	if m.From == "" {
		m.From = s.from
	}
	m.To = append([]string(nil), s.to...)
	s.box.Add(m)
	return nil
}
