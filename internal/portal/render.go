package portal

import (
	"bytes"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// page is what every template receives; each page uses the fields it needs.
type page struct {
	Title         string
	Message       string
	Error         string
	Notice        string
	Next          string
	Token         string
	Viewer        *viewer
	Keys          *keysView
	Team          *teamView
	Call          *callView
	Calls         *callsView
	Balance       *balanceView
	Webhooks      *webhooksView
	Webhook       *webhookView
	Delivery      *deliveryView
	Catalogue     []catalogueEvent
	Home          *homeView
	Todos         *todosView
	Notifications *notificationsView
	Voicemails    *voicemailsView
	Jobs          *jobsView
	Messages      *messagesView
	Blocked       *blockedView
	Texts         *textsView
	Contacts      *contactsView
	ContactForm   *contactForm
	Outbox        *outboxView
	// DevOutbox links the development outbox from the header; render sets it.
	DevOutbox bool
}

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2 Jan 2006 15:04 UTC")
		case *time.Time:
			if v == nil {
				return "never"
			}
			return v.UTC().Format("2 Jan 2006 15:04 UTC")
		}
		return ""
	},
	// whenSec is when to the second, for attempts that may be seconds apart.
	"whenSec": func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04:05 UTC") },
	// whenIn formats a time in the named time zone (the account's); UTC when it is unknown.
	"whenIn": func(t time.Time, zone string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		return t.In(loc).Format("2 Jan 15:04")
	},
	"join": strings.Join,
	"inc":  func(i int) int { return i + 1 },
	// fieldOf bundles a form field for the "field" template.
	"fieldOf": func(name, label, value, err, typ string) map[string]string {
		return map[string]string{"Name": name, "Label": label, "Value": value, "Error": err, "Type": typ}
	},
	"effective": func(as auth.Abilities) string { return strings.Join(as.Effective(), ", ") },
	"isOwner":   func(u store.User) bool { return u.Role == "owner" },
	// statusLabel words an endpoint's status for people.
	"statusLabel": func(status string) string {
		switch status {
		case "active":
			return "Active"
		case "paused":
			return "Paused"
		}
		return strings.ToUpper(status[:min(1, len(status))]) + strings.ReplaceAll(status[min(1, len(status)):], "_", " ")
	},
	"pounds":     pounds,
	"clock":      clockTime,
	"tel":        telHref,
	"callerName": callerName,
	"int64":      func(n int) int64 { return int64(n) },
	"chart":      func(id, title string, c barChart) chartArgs { return chartArgs{ID: id, Title: title, Chart: c} },
	"fields":     func(f webhookForm, events []string) endpointFields { return endpointFields{Form: f, Events: events} },
}

// chartArgs is what the chart partial receives: an element id, a title and the chart.
type chartArgs struct {
	ID, Title string
	Chart     barChart
}

// endpointFields is what the endpoint-fields partial receives.
type endpointFields struct {
	Form   webhookForm
	Events []string
}

// parsePages parses each page with the layout into its own set.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimPrefix(n, "templates/")
		if base == "layout.html" {
			continue
		}
		pages[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/*.tmpl", n))
	}
	return pages
}

// render writes a page; it renders into a buffer first so a template error is a clean 500.
func (p *Portal) render(w http.ResponseWriter, r *http.Request, status int, name string, data page) {
	data.DevOutbox = p.cfg.Outbox != nil
	var buf bytes.Buffer
	if err := p.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		p.cfg.Log.Error(err, "render a portal page", "page", name, "path", r.URL.Path)
		http.Error(w, "Something went wrong on our side.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}
