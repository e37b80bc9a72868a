package portal

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// inboxPerPage is the inbox lists' page size (the API's default page).
const inboxPerPage = 25

// mayChange reports whether a signed-in user may do what ability allows: what they could put
// on a key of their own (store.User.MayGrant), so the portal grants no more than the API would.
func mayChange(u store.User, ability auth.Ability) bool {
	return u.LeftAt == nil && u.MayGrant(ability)
}

// pageNumber is the page query parameter, 1 when absent or not a positive number.
func pageNumber(q url.Values) int {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pager is the previous and next links of a list a page at a time.
type pager struct {
	Page, Pages, Total int
	Prev, Next         string
}

func newPager(path string, q url.Values, pageNo, total int) pager {
	pg := pager{Page: pageNo, Total: total, Pages: max(1, (total+inboxPerPage-1)/inboxPerPage)}
	link := func(n int) string {
		l := url.Values{}
		for k, v := range q {
			l[k] = v
		}
		l.Set("page", strconv.Itoa(n))
		return path + "?" + l.Encode()
	}
	if pageNo > 1 {
		pg.Prev = link(pageNo - 1)
	}
	if pageNo < pg.Pages {
		pg.Next = link(pageNo + 1)
	}
	return pg
}

type todosView struct {
	Status    string
	Statuses  []string
	Tasks     []store.Task
	MayChange bool
	Pager     pager
}

var taskStatuses = []string{"open", "done", "all"}

// todos lists the account's to-dos as GET /v1/tasks does (store.ListTasks).
func (p *Portal) todos(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	status := choice(q, "status", "open", taskStatuses)
	pageNo := pageNumber(q)
	tasks, total, err := p.store.ListTasks(r.Context(), v.Account.ID, status, inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "todos.html", page{Title: "To-dos", Viewer: &v, Notice: inboxNotices[q.Get("done")],
		Todos: &todosView{Status: status, Statuses: taskStatuses, Tasks: tasks, MayChange: mayChange(v.User, auth.InboxWrite),
			Pager: newPager("/portal/todos", url.Values{"status": {status}}, pageNo, total)}})
}

var inboxNotices = map[string]string{
	"done":     "The to-do is done.",
	"open":     "The to-do is open again.",
	"read":     "The notification is marked read.",
	"read-all": "All notifications are marked read.",
}

// setTodoStatus ticks a to-do off or opens it again, as PATCH /v1/tasks/{task} does.
func (p *Portal) setTodoStatus(w http.ResponseWriter, r *http.Request, v viewer) {
	if !mayChange(v.User, auth.InboxWrite) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "You may not change to-dos."})
		return
	}
	status := r.PostFormValue("status")
	if status != "open" && status != "done" {
		p.render(w, r, http.StatusUnprocessableEntity, "message.html", page{Title: "To-dos", Viewer: &v, Message: "A to-do is either open or done."})
		return
	}
	if _, err := p.store.SetTaskStatus(r.Context(), v.Account.ID, r.PathValue("task"), status, v.User.ID, p.cfg.Clock.Now()); err != nil {
		p.fail(w, r, err)
		return
	}
	back := "open"
	if status == "open" {
		back = "done"
	}
	http.Redirect(w, r, "/portal/todos?status="+back+"&done="+status, http.StatusSeeOther)
}

type notificationsView struct {
	UnreadOnly    bool
	Notifications []store.Notification
	Unread        int
	MayChange     bool
	Pager         pager
}

// notifications lists the user's own notifications as GET /v1/notifications does.
func (p *Portal) notifications(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	unreadOnly := q.Get("unread") == "1"
	pageNo := pageNumber(q)
	list, total, unread, err := p.store.ListNotifications(r.Context(), v.Account.ID, v.User.ID, unreadOnly, inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	filter := url.Values{}
	if unreadOnly {
		filter.Set("unread", "1")
	}
	p.render(w, r, http.StatusOK, "notifications.html", page{Title: "Notifications", Viewer: &v, Notice: inboxNotices[q.Get("done")],
		Notifications: &notificationsView{UnreadOnly: unreadOnly, Notifications: list, Unread: unread,
			MayChange: mayChange(v.User, auth.InboxWrite), Pager: newPager("/portal/notifications", filter, pageNo, total)}})
}

// readNotification marks one of the user's notifications read (POST /v1/notifications/{id}/read).
func (p *Portal) readNotification(w http.ResponseWriter, r *http.Request, v viewer) {
	if !mayChange(v.User, auth.InboxWrite) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "You may not change notifications."})
		return
	}
	if _, _, err := p.store.MarkNotificationRead(r.Context(), v.Account.ID, v.User.ID, r.PathValue("notification"), p.cfg.Clock.Now(), nil); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/notifications?done=read", http.StatusSeeOther)
}

// readAllNotifications marks all the user's notifications read (POST /v1/notifications/read-all).
func (p *Portal) readAllNotifications(w http.ResponseWriter, r *http.Request, v viewer) {
	if !mayChange(v.User, auth.InboxWrite) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "You may not change notifications."})
		return
	}
	if _, err := p.store.MarkAllNotificationsRead(r.Context(), v.Account.ID, v.User.ID, p.cfg.Clock.Now(), nil); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/notifications?done=read-all", http.StatusSeeOther)
}

// voicemailRow is a voicemail and the signed link of its audio ("" without one).
type voicemailRow struct {
	Call     store.Call
	AudioURL string
}

type voicemailsView struct {
	Voicemails []voicemailRow
	Pager      pager
}

// voicemails lists the calls that ended in a voicemail, newest first, with a player each:
// GET /v1/calls?status=voicemail (store.ListCalls) and the recordings' stream-url links.
func (p *Portal) voicemails(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	pageNo := pageNumber(q)
	calls, total, err := p.store.ListCalls(r.Context(), v.Account.ID, store.CallFilter{Activity: store.CallActivities[0], Status: "voicemail",
		Limit: inboxPerPage, Offset: (pageNo - 1) * inboxPerPage})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &voicemailsView{Pager: newPager("/portal/voicemails", url.Values{}, pageNo, total)}
	expires := p.cfg.Clock.Now().Add(links.RecordingTTL).Truncate(time.Second)
	for _, c := range calls {
		row := voicemailRow{Call: c}
		if c.RecordingPublicID != nil && len(p.cfg.LinkSigningKey) > 0 {
			row.AudioURL = links.Recording(p.cfg.BaseURL, p.cfg.LinkSigningKey, *c.RecordingPublicID, expires)
		}
		view.Voicemails = append(view.Voicemails, row)
	}
	p.render(w, r, http.StatusOK, "voicemails.html", page{Title: "Voicemails", Viewer: &v, Voicemails: view})
}

// jobStatuses are the job request filters, as GET /v1/job-requests names them.
var jobStatuses = []string{"open", "new", "confirmed", "done", "declined", "all"}

// jobStatusSets is what each filter selects (nil: every status).
var jobStatusSets = map[string][]string{"open": {"new", "confirmed"}, "new": {"new"}, "confirmed": {"confirmed"},
	"done": {"done"}, "declined": {"declined"}, "all": nil}

type jobsView struct {
	Status   string
	Statuses []string
	Jobs     []store.JobRequest
	Pager    pager
}

// jobs lists the account's job requests as GET /v1/job-requests does.
func (p *Portal) jobs(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	status := choice(q, "status", "open", jobStatuses)
	pageNo := pageNumber(q)
	list, total, err := p.store.ListJobRequests(r.Context(), v.Account.ID, jobStatusSets[status], inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "jobs.html", page{Title: "Job requests", Viewer: &v,
		Jobs: &jobsView{Status: status, Statuses: jobStatuses, Jobs: list, Pager: newPager("/portal/jobs", url.Values{"status": {status}}, pageNo, total)}})
}

// messageSlipRow is a message slip and the signed links of its recordings ("" without one).
type messageSlipRow struct {
	Slip              store.MessageSlip
	NameURL, AudioURL string
}

type messagesView struct {
	Slips []messageSlipRow
	Pager pager
}

// messages lists the message slips left with the virtual receptionist, newest first, with
// players for the caller's name and message: GET /v1/reception-messages (store.ListMessageSlips).
func (p *Portal) messages(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	pageNo := pageNumber(q)
	slips, total, err := p.store.ListMessageSlips(r.Context(), v.Account.ID, store.SlipFilter{}, inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &messagesView{Pager: newPager("/portal/messages", url.Values{}, pageNo, total)}
	expires := p.cfg.Clock.Now().Add(links.RecordingTTL).Truncate(time.Second)
	link := func(id *string) string {
		if id == nil || len(p.cfg.LinkSigningKey) == 0 {
			return ""
		}
		return links.Recording(p.cfg.BaseURL, p.cfg.LinkSigningKey, *id, expires)
	}
	for _, s := range slips {
		view.Slips = append(view.Slips, messageSlipRow{Slip: s, NameURL: link(s.NameRecordingPublicID), AudioURL: link(s.MessageRecordingPublicID)})
	}
	p.render(w, r, http.StatusOK, "messages.html", page{Title: "Message slips", Viewer: &v, Messages: view})
}

type textsView struct {
	Conversations []store.SMSConversation
	Conversation  *store.SMSConversation
	Messages      []store.SMSMessage
	Pager         pager
}

// texts lists the text-message threads, most recent first (GET /v1/sms/conversations).
func (p *Portal) texts(w http.ResponseWriter, r *http.Request, v viewer) {
	pageNo := pageNumber(r.URL.Query())
	list, total, err := p.store.ListSMSConversations(r.Context(), v.Account.ID, inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "texts.html", page{Title: "Text messages", Viewer: &v,
		Texts: &textsView{Conversations: list, Pager: newPager("/portal/texts", url.Values{}, pageNo, total)}})
}

// textThread shows one thread's messages, oldest first (GET /v1/sms/conversations/{id}/messages).
func (p *Portal) textThread(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	conv, err := p.store.GetSMSConversation(ctx, v.Account.ID, r.PathValue("conversation"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	pageNo := pageNumber(r.URL.Query())
	msgs, total, err := p.store.ListSMSMessages(ctx, conv, inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "text-thread.html", page{Title: "Texts with " + conv.CounterpartyE164, Viewer: &v,
		Texts: &textsView{Conversation: &conv, Messages: msgs, Pager: newPager("/portal/texts/"+url.PathEscape(conv.PublicID), url.Values{}, pageNo, total)}})
}

type contactsView struct {
	Search    string
	Contacts  []store.Contact
	MayChange bool
	Pager     pager
}

// contacts lists and searches the contact directory as GET /v1/contacts?search= does.
func (p *Portal) contacts(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	search := strings.TrimSpace(q.Get("search"))
	if len(search) > 100 {
		search = search[:100]
	}
	pageNo := pageNumber(q)
	list, total, err := p.store.ListContacts(r.Context(), v.Account.ID, store.ContactSearch(search), inboxPerPage, (pageNo-1)*inboxPerPage)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	filter := url.Values{}
	if search != "" {
		filter.Set("search", search)
	}
	p.render(w, r, http.StatusOK, "contacts.html", page{Title: "Contacts", Viewer: &v, Notice: contactNotice(q.Get("done")),
		Contacts: &contactsView{Search: search, Contacts: list, MayChange: mayEditContacts(v.User), Pager: newPager("/portal/contacts", filter, pageNo, total)}})
}
