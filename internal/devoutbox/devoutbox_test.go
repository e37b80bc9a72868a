package devoutbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
	"github.com/switchboard-dev/switchboard/internal/devoutbox/smtpd"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// The service's own mailer (net/smtp) sends to the outbox's SMTP server, which keeps what arrived, newest first.
func TestOutboxKeepsWhatTheMailerSends(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	box := devoutbox.New(3, clocktesting.NewFakePassiveClock(at))
	srv, err := smtpd.Start("127.0.0.1:0", box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	mailer := send.SMTPMailer{Addr: srv.Addr(), From: "portal@switchboard.test"}
	for i := 1; i <= 4; i++ {
		body := fmt.Sprintf("Hello,\n\nmessage %d: http://127.0.0.1:8080/portal/sign-in/link?token=t%d\n", i, i)
		if err := mailer.Send(context.Background(), []string{"ann@example.com", "bob@example.com"}, fmt.Sprintf("Subject %d – ünïcode", i), body); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	got := box.Messages()
	if len(got) != 3 {
		t.Fatalf("kept %d messages, want the last 3", len(got))
	}
	for i, m := range got {
		n := 4 - i
		if m.ID != n || m.Subject != fmt.Sprintf("Subject %d – ünïcode", n) {
			t.Errorf("message %d: id %d subject %q, want message %d", i, m.ID, m.Subject, n)
		}
		if m.From != "portal@switchboard.test" || strings.Join(m.To, ",") != "ann@example.com,bob@example.com" {
			t.Errorf("message %d: from %q to %v", n, m.From, m.To)
		}
		if want := fmt.Sprintf("message %d: http://127.0.0.1:8080/portal/sign-in/link?token=t%d\n", n, n); !strings.Contains(m.Body, want) || strings.Contains(m.Body, "\r") {
			t.Errorf("message %d body %q, want it to hold %q with LF line ends", n, m.Body, want)
		}
		if !m.Received.Equal(at) {
			t.Errorf("message %d received at %v, want the clock's %v", n, m.Received, at)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, raw, from, subject, body string
	}{
		{"plain", "From: Portal <portal@x.test>\r\nSubject: Hi\r\n\r\nline one\r\nline two\r\n", "portal@x.test", "Hi", "line one\nline two\n"},
		{"encoded subject", "From: a@x.test\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\n\r\nbody", "a@x.test", "Café", "body"},
		{"quoted-printable", "From: a@x.test\r\nSubject: s\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nhttp://h/portal/sign-in/link?token=3Dabc&next=3D%2F=\r\nportal%2Fkeys\r\n", "a@x.test", "s",
			"http://h/portal/sign-in/link?token=abc&next=%2Fportal%2Fkeys\n"},
		{"base64", "From: a@x.test\r\nSubject: s\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8g\r\nd29ybGQ=\r\n", "a@x.test", "s", "hello world"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := devoutbox.Parse(strings.NewReader(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if m.From != tc.from || m.Subject != tc.subject || m.Body != tc.body {
				t.Errorf("got from %q subject %q body %q, want %q %q %q", m.From, m.Subject, m.Body, tc.from, tc.subject, tc.body)
			}
		})
	}
}
