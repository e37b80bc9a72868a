package portal

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/devoutbox"
)

// outboxView is the development outbox page: the kept emails, newest first.
type outboxView struct {
	Messages []outboxMessage
}

type outboxMessage struct {
	devoutbox.Message
	Body []bodyPart
}

// bodyPart is a run of an email's text; Link is set when it is a link into this service.
type bodyPart struct {
	Text string
	Link bool
}

var urlPattern = regexp.MustCompile(`https?://[^\s<>"]+`)

// linkify splits body into text and links; only links that start with base (this service's
// origin) become clickable, so a page of stray mail cannot send a developer elsewhere.
func linkify(body, base string) []bodyPart {
	var parts []bodyPart
	last := 0
	for _, loc := range urlPattern.FindAllStringIndex(body, -1) {
		u := body[loc[0]:loc[1]]
		if base == "" || (u != base && !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, base+"?")) {
			continue
		}
		if loc[0] > last {
			parts = append(parts, bodyPart{Text: body[last:loc[0]]})
		}
		parts = append(parts, bodyPart{Text: u, Link: true})
		last = loc[1]
	}
	if last < len(body) {
		parts = append(parts, bodyPart{Text: body[last:]})
	}
	return parts
}

// outbox shows the development outbox. It is registered only when Config.Outbox is set, and
// needs no sign-in: signing in is what its sign-in links are for.
func (p *Portal) outbox(w http.ResponseWriter, r *http.Request) {
	msgs := p.cfg.Outbox.Messages()
	view := &outboxView{Messages: make([]outboxMessage, len(msgs))}
	for i, m := range msgs {
		view.Messages[i] = outboxMessage{Message: m, Body: linkify(m.Body, p.cfg.BaseURL)}
	}
	p.render(w, r, http.StatusOK, "outbox.html", page{Title: "Development outbox", Outbox: view})
}
