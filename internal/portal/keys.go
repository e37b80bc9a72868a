package portal

import (
	"net/http"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// keyChoice is a permission the create form offers.
type keyChoice struct {
	Name    string
	Implies string
}

type keysView struct {
	Keys      []store.KeyListing
	MayCreate bool
	Choices   []keyChoice
	// Created is the new key, whose value is shown this once.
	Created *store.APIKey
}

// grantable lists the permissions u may put on a key (read is on every key), with what each implies.
func grantable(u store.User) []keyChoice {
	var out []keyChoice
	for _, a := range auth.AllAbilities {
		if a == auth.Read || !u.MayGrant(a) {
			continue
		}
		var implies []string
		for _, e := range (auth.Abilities{a}).Effective() {
			if e != string(a) {
				implies = append(implies, e)
			}
		}
		out = append(out, keyChoice{Name: string(a), Implies: strings.Join(implies, ", ")})
	}
	return out
}

func (p *Portal) keysPage(w http.ResponseWriter, r *http.Request, v viewer, status int, created *store.APIKey, errMsg string) {
	own := int64(0)
	if v.User.Role != "owner" {
		own = v.User.ID
	}
	keys, err := p.store.AccountAPIKeys(r.Context(), v.Account.ID, own)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &keysView{Keys: keys, MayCreate: v.User.MayManageKeys(), Choices: grantable(v.User), Created: created}
	notice := ""
	if r.Method == http.MethodGet && r.URL.Query().Get("done") == "revoked" {
		notice = "The key was revoked: it no longer works."
	}
	p.render(w, r, status, "keys.html", page{Title: "API keys", Viewer: &v, Keys: view, Error: errMsg, Notice: notice})
}

func (p *Portal) keys(w http.ResponseWriter, r *http.Request, v viewer) {
	p.keysPage(w, r, v, http.StatusOK, nil, "")
}

// createKey creates a key with the store's CreateAPIKey, the same rule as `admin create-key`.
func (p *Portal) createKey(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := r.ParseForm(); err != nil {
		p.keysPage(w, r, v, http.StatusBadRequest, nil, "The form could not be read.")
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if name == "" || len(name) > 100 {
		p.keysPage(w, r, v, http.StatusUnprocessableEntity, nil, "Give the key a name of at most 100 characters.")
		return
	}
	abilities, err := auth.ParseAbilities(r.PostForm["permission"])
	if err != nil {
		p.keysPage(w, r, v, http.StatusUnprocessableEntity, nil, err.Error())
		return
	}
	key, err := p.store.CreateAPIKey(r.Context(), v.User.ID, name, abilities)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.keysPage(w, r, v, http.StatusCreated, &key, "")
}

func (p *Portal) revokeKey(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := p.store.RevokeAccountAPIKey(r.Context(), v.User, r.PathValue("key"), p.cfg.Clock.Now()); err != nil {
		p.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/portal/keys?done=revoked", http.StatusSeeOther)
}
