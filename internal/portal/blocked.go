package portal

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/period"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// maxBlockLabelLen bounds a block's label (the API's limit for a phone's label is 50; a
// block's note says who the caller is, so it gets the length of a name).
const maxBlockLabelLen = 200

// blockedView is the blocked callers page: the list, and for an owner the add form and a
// remove button on each.
type blockedView struct {
	Callers   []store.BlockedCaller
	MayChange bool
	Numbers   []store.NumberRow
	Form      blockForm
}

// blockForm is the add form as posted, with a message per field that was refused.
type blockForm struct {
	Number, Action, On, Label string
	Errors                    map[string]string
}

// block is a valid add form.
type block struct {
	E164, Action, On, Label string
}

// readBlockForm checks the add form: a phone number (national numbers read as UK ones, as
// the API reads contacts' numbers), what its calls get, every number or one of the account's
// numbers (by public_id), and an optional label. The messages are worded as the API's 422s.
func readBlockForm(form url.Values, numbers []store.NumberRow) (blockForm, block, bool) {
	f := blockForm{Number: strings.TrimSpace(form.Get("number")), Action: form.Get("action"), On: form.Get("on"),
		Label: strings.TrimSpace(form.Get("label")), Errors: map[string]string{}}
	var b block
	switch e164, ok := phone.ToE164(f.Number); {
	case f.Number == "":
		f.Errors["number"] = "The number field is required."
	case !ok:
		f.Errors["number"] = "The number must be a phone number."
	default:
		b.E164 = e164
	}
	if f.Action != "reject" && f.Action != "voicemail" {
		f.Errors["action"] = "The action must be one of: reject, voicemail."
	}
	if f.On != "" && !hasNumber(numbers, f.On) {
		f.Errors["on"] = "The number to block it on must be one of the account's numbers."
	}
	switch {
	case utf8.RuneCountInString(f.Label) > maxBlockLabelLen:
		f.Errors["label"] = "The label may not be longer than 200 characters."
	case strings.ContainsRune(f.Label, 0):
		f.Errors["label"] = "The label may not contain NUL characters."
	}
	b.Action, b.On, b.Label = f.Action, f.On, f.Label
	return f, b, len(f.Errors) == 0
}

func hasNumber(numbers []store.NumberRow, publicID string) bool {
	for _, n := range numbers {
		if n.PublicID == publicID {
			return true
		}
	}
	return false
}

var blockedNotices = map[string]string{
	"added":   "The caller is blocked.",
	"removed": "The caller is no longer blocked.",
}

// blocked lists the account's blocked callers as GET /v1/blocked-callers does.
func (p *Portal) blocked(w http.ResponseWriter, r *http.Request, v viewer) {
	p.blockedPage(w, r, v, http.StatusOK, blockForm{Action: "reject"}, blockedNotices[r.URL.Query().Get("done")])
}

func (p *Portal) blockedPage(w http.ResponseWriter, r *http.Request, v viewer, status int, form blockForm, notice string) {
	ctx := r.Context()
	list, err := p.store.ListBlockedCallers(ctx, v.Account.ID, period.Location(v.Account.TimeZone))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &blockedView{Callers: list, MayChange: store.MayBlockCallers(v.User), Form: form}
	if view.MayChange {
		if view.Numbers, err = p.store.ListNumbers(ctx, v.Account.ID); err != nil {
			p.fail(w, r, err)
			return
		}
	}
	p.render(w, r, status, "blocked.html", page{Title: "Blocked callers", Viewer: &v, Notice: notice, Blocked: view})
}

// blockCaller adds a block (owners; store.Store.BlockCaller checks it again).
func (p *Portal) blockCaller(w http.ResponseWriter, r *http.Request, v viewer) {
	if !store.MayBlockCallers(v.User) {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "Only an owner can block callers."})
		return
	}
	_ = r.ParseForm()
	numbers, err := p.store.ListNumbers(r.Context(), v.Account.ID)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	form, b, ok := readBlockForm(r.PostForm, numbers)
	if !ok {
		p.blockedPage(w, r, v, http.StatusUnprocessableEntity, form, "")
		return
	}
	if _, err := p.store.BlockCaller(r.Context(), v.User, b.E164, b.Action, b.Label, b.On, p.cfg.Clock.Now()); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/blocked?done=added", http.StatusSeeOther)
}

// unblockCaller removes a block (owners).
func (p *Portal) unblockCaller(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := p.store.UnblockCaller(r.Context(), v.User, r.PathValue("blocked")); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/blocked?done=removed", http.StatusSeeOther)
}
