package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/swaggest/jsonschema-go"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// Me is GET /me.
type Me struct {
	Tenant        MeTenant     `json:"tenant" required:"true"`
	User          MeUser       `json:"user" required:"true"`
	Abilities     abilityNames `json:"abilities" required:"true"`
	CanTranscribe bool         `json:"can_transcribe" required:"true"`
	Realtime      MeRealtime   `json:"realtime" required:"true"`
}

// MeTenant is the account as /me shows it.
type MeTenant struct {
	Name   string `json:"name" required:"true"`
	Status string `json:"status" required:"true" enum:"active,paused"`
}

// MeUser is the key's user.
type MeUser struct {
	Name  string `json:"name" required:"true"`
	Email string `json:"email" required:"true"`
	Role  string `json:"role" required:"true" enum:"owner,member"`
}

// MeRealtime is the live channel's connection details.
type MeRealtime struct {
	Enabled bool   `json:"enabled" required:"true"`
	Channel string `json:"channel" required:"true"`
	Key     string `json:"key" required:"true"`
	Host    string `json:"host" required:"true"`
	Port    int    `json:"port" required:"true"`
	Scheme  string `json:"scheme" required:"true"`
}

// abilityNames are permissions; the description lists the values (auth.AllAbilities) as the
// items' enum, which a tag cannot name.
type abilityNames []string

// InlineJSONSchema keeps the list inline in each schema that has one (jsonschema.SchemaInliner).
func (abilityNames) InlineJSONSchema() {}

// PrepareJSONSchema names the values (jsonschema.Preparer).
func (abilityNames) PrepareJSONSchema(s *jsonschema.Schema) error {
	values := make([]any, len(auth.AllAbilities))
	for i, a := range auth.AllAbilities {
		values[i] = string(a)
	}
	s.ItemsEns().SchemaOrBoolEns().TypeObjectEns().WithEnum(values...)
	return nil
}

type meResource struct{ *Server }

func (r meResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/me").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.GET("").To(r.get).Operation("getMe").
		Doc("The account, the user and the permissions of the key; the way to check a key works.").
		Returns(http.StatusOK, "OK", Me{}), Access{Permission: auth.Read}))
	c.Add(ws)
}

func (r meResource) get(req *restful.Request, resp *restful.Response) {
	p := principal(req)
	writeJSON(resp, http.StatusOK, Me{
		Tenant:        MeTenant{Name: p.Account.Name, Status: p.Account.Status},
		User:          MeUser{Name: p.User.Name, Email: p.User.Email, Role: p.User.Role},
		Abilities:     p.Abilities.Effective(),
		CanTranscribe: canTranscribe(p),
		Realtime:      r.realtime(p),
	})
}

// canTranscribe: the key may start transcriptions and nothing else stands in the way.
func canTranscribe(p *store.Principal) bool {
	return plans.TranscriptionGate(p.Account.Plan, p.Account.TranscriptionDisabled) == "" &&
		p.Abilities.Has(auth.Transcribe) && p.User.CanTranscribe && p.Account.Status == "active"
}

// realtime describes the account's private live channel (see realtime.go).
func (r meResource) realtime(p *store.Principal) MeRealtime {
	return realtimeInfo(r.Server.realtime, r.cfg.BaseURL, p.Account.PublicID)
}
