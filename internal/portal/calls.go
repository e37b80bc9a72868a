package portal

import (
	"errors"
	"net/http"

	"github.com/switchboard-dev/switchboard/internal/store"
)

type callView struct {
	Call       store.Call
	Transcript *store.Transcript
}

// call is the page links.dashboard points at: the call of the signed-in user's account, with
// its summary and transcript. Another account's call is a 404, as in the API.
func (p *Portal) call(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	c, err := p.store.GetCall(ctx, v.Account.ID, r.PathValue("call"))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := &callView{Call: c}
	if c.RecordingPublicID != nil {
		rec, err := p.store.GetRecording(ctx, v.Account.ID, *c.RecordingPublicID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			p.fail(w, r, err)
			return
		}
		if err == nil {
			t, err := p.store.GetTranscript(ctx, v.Account.ID, rec.ID)
			switch {
			case err == nil:
				view.Transcript = &t
			case !errors.Is(err, store.ErrNotFound):
				p.fail(w, r, err)
				return
			}
		}
	}
	p.render(w, r, http.StatusOK, "call.html", page{Title: "Call from " + callerLabel(c), Viewer: &v, Call: view})
}

func callerLabel(c store.Call) string {
	if c.CallerDisplayName != "" {
		return c.CallerDisplayName
	}
	return c.From
}
