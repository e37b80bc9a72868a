// Package devoutbox is the local development mail outbox: the last emails the service sent,
// kept in memory instead of delivered, so that `make run` can show the portal's sign-in links
// and invitations on a page. Its SMTP server (package smtpd, go-smtp) is imported by
// hack/localdev only, so the switchboard binary holds no mail server.
package devoutbox

import (
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultKeep is how many messages an outbox keeps; older ones are dropped.
const DefaultKeep = 200

// MaxMessageBytes bounds one message: the portal's emails are a few hundred bytes.
const MaxMessageBytes = 1 << 20

// Message is one email the outbox received.
type Message struct {
	// ID counts messages from 1 in the order they arrived.
	ID       int
	Received time.Time
	From     string
	To       []string
	Subject  string
	// Body is the decoded text, with LF line ends.
	Body string
}

// Outbox keeps the newest messages.
type Outbox struct {
	clock clock.PassiveClock
	keep  int

	mu   sync.Mutex
	msgs []Message // oldest first, at most keep
	next int
}

// New makes an outbox that keeps the last keep messages (<= 0: DefaultKeep).
func New(keep int, clk clock.PassiveClock) *Outbox {
	if keep <= 0 {
		keep = DefaultKeep
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Outbox{clock: clk, keep: keep}
}

// Messages returns the kept messages, newest first.
func (o *Outbox) Messages() []Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Message, len(o.msgs))
	for i, m := range o.msgs {
		out[len(o.msgs)-1-i] = m
	}
	return out
}

// Add keeps m, numbered and stamped with the clock's time, dropping the oldest past the bound.
func (o *Outbox) Add(m Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	m.ID = o.next
	m.Received = o.clock.Now()
	if len(o.msgs) == o.keep {
		o.msgs = append(o.msgs[:0], o.msgs[1:]...)
	}
	o.msgs = append(o.msgs, m)
}

// Parse reads an RFC 5322 message: its sender, decoded subject and text body (quoted-printable
// and base64 bodies are decoded; lines end in LF).
func Parse(r io.Reader) (Message, error) {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return Message{}, err
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	body := msg.Body
	switch strings.ToLower(strings.TrimSpace(msg.Header.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxMessageBytes))
	if err != nil {
		return Message{}, err
	}
	from := msg.Header.Get("From")
	if a, err := mail.ParseAddress(from); err == nil {
		from = a.Address
	}
	return Message{From: from, Subject: subject, Body: strings.ReplaceAll(string(b), "\r\n", "\n")}, nil
}
