package portal

import (
	"errors"
	"net/http"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/store"
)

type teamView struct {
	Users []store.User
}

func (p *Portal) teamPage(w http.ResponseWriter, r *http.Request, v viewer, status int, notice, errMsg string) {
	users, err := p.store.AccountUsers(r.Context(), v.Account.ID)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, status, "team.html", page{Title: "Team", Viewer: &v, Team: &teamView{Users: users}, Notice: notice, Error: errMsg})
}

func (p *Portal) team(w http.ResponseWriter, r *http.Request, v viewer) {
	if v.User.Role != "owner" {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "Only an owner can manage the team."})
		return
	}
	p.teamPage(w, r, v, http.StatusOK, teamNotices[r.URL.Query().Get("done")], "")
}

// teamNotices confirm an action after its redirect (?done=...).
var teamNotices = map[string]string{"saved": "Allowances saved.", "removed": "The member was removed: their keys and sessions no longer work."}

func (p *Portal) setAllowances(w http.ResponseWriter, r *http.Request, v viewer) {
	_, err := p.store.SetUserAllowances(r.Context(), v.User, r.PathValue("user"),
		r.PostFormValue("can_manage_api_keys") == "on", r.PostFormValue("can_transcribe") == "on")
	if err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/team?done=saved", http.StatusSeeOther)
}

// removeUser marks a member as gone (as `admin remove-user` does): their keys get 401 and
// their sessions end on their next request.
func (p *Portal) removeUser(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := p.store.RemoveAccountUser(r.Context(), v.User, r.PathValue("user"), p.cfg.Clock.Now()); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/team?done=removed", http.StatusSeeOther)
}

// invite adds a member with the store's CreateUser (as `admin create-user` does) and emails
// them a sign-in link.
func (p *Portal) invite(w http.ResponseWriter, r *http.Request, v viewer) {
	if v.User.Role != "owner" {
		p.render(w, r, http.StatusForbidden, "message.html", page{Title: "Not allowed", Viewer: &v, Message: "Only an owner can invite members."})
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	name := strings.TrimSpace(r.PostFormValue("name"))
	if !strings.Contains(email, "@") || len(email) > 320 || name == "" || len(name) > 200 {
		p.teamPage(w, r, v, http.StatusUnprocessableEntity, "", "Give the member's name and email address.")
		return
	}
	u, err := p.store.CreateUser(r.Context(), store.NewUser{AccountID: v.Account.ID, Name: name, Email: email, Role: "member",
		CanManageAPIKeys: r.PostFormValue("can_manage_api_keys") == "on", CanTranscribe: r.PostFormValue("can_transcribe") == "on"})
	if err != nil {
		if !errors.Is(err, store.ErrUserExists) {
			p.fail(w, r, err)
			return
		}
		p.teamPage(w, r, v, http.StatusUnprocessableEntity, "", "That email is already a user of this account.")
		return
	}
	p.emailLinks(u.Email, []store.User{u}, Root)
	p.teamPage(w, r, v, http.StatusCreated, "Invited "+u.Email+": a sign-in link is on its way to them.", "")
}
