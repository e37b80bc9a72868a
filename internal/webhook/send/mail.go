package send

import (
	"context"
	"fmt"
	"net/smtp"
	"strings"
	"time"
)

// Mailer sends a plain-text email.
type Mailer interface {
	Send(ctx context.Context, to []string, subject, body string) error
}

// SMTPMailer sends through a relay (no authentication: the relay trusts the cluster).
type SMTPMailer struct {
	// Addr is the relay, host:port.
	Addr string
	// From is the sender address.
	From string
}

// Send delivers one message to every recipient.
func (m SMTPMailer) Send(ctx context.Context, to []string, subject, body string) error {
	if m.Addr == "" {
		return fmt.Errorf("no SMTP relay is configured")
	}
	from := m.From
	if from == "" {
		from = "webhooks@switchboard.dev"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
		from, strings.Join(to, ", "), subject, time.Now().UTC().Format(time.RFC1123Z))
	b.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	errc := make(chan error, 1)
	go func() { errc <- smtp.SendMail(m.Addr, nil, from, to, []byte(b.String())) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SwitchOffMessage is the email to an account's owners when an endpoint is switched off.
func SwitchOffMessage(accountName, endpointName, url string, failingSince time.Time) (subject, body string) {
	subject = fmt.Sprintf("Webhook endpoint %q switched off", endpointName)
	body = fmt.Sprintf(`Hello,

Deliveries to the webhook endpoint %q of %s (%s) have failed continuously since %s,
so it has been switched off and no more events are sent to it.

When the endpoint works again, set it active (PATCH /v1/webhooks/{endpoint} with
{"status": "active"}); deliveries that failed meanwhile can be resent from its delivery list.

Switchboard
`, endpointName, accountName, url, failingSince.UTC().Format(time.RFC3339))
	return subject, body
}
