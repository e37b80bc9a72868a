package apiserver

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/realtime"
)

// RealtimeConfig configures the live channel: New(cfg, st, Realtime(rc)).
type RealtimeConfig struct {
	Signer realtime.Signer
	// Sockets serves /app/<key> (the WebSocket endpoint) on the API's own listener.
	Sockets http.Handler
	// Public host, port and scheme (ws or wss) clients connect to, as GET /me reports them;
	// empty or zero ones come from the API's base URL.
	PublicHost   string
	PublicPort   int
	PublicScheme string
}

// RealtimeAuthRequest is the body of POST /v1/realtime/auth (what Pusher clients send).
type RealtimeAuthRequest struct {
	SocketID    *string `json:"socket_id" required:"true" description:"The socket_id of pusher:connection_established."`
	ChannelName *string `json:"channel_name" required:"true" description:"The channel GET /me names: private-account.<account id>."`
}

// RealtimeAuth is the signature a Pusher client subscribes with.
type RealtimeAuth struct {
	Auth string `json:"auth" required:"true" description:"<key>:<hex HMAC-SHA256 of socket_id:channel_name>"`
}

// Realtime adds the live channel: POST /v1/realtime/auth and the WebSocket endpoint /app/<key>.
// Without Sockets the channel is off: the route stays in the API (so the description is the
// same on every installation) and answers 404, and GET /me says enabled: false.
func Realtime(rc RealtimeConfig) func(*Server) Resource {
	return func(s *Server) Resource {
		if rc.Sockets != nil {
			s.realtime = &rc
		}
		return realtimeResource{s, rc}
	}
}

type realtimeResource struct {
	*Server
	rc RealtimeConfig
}

const mimeForm = "application/x-www-form-urlencoded"

func (r realtimeResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/realtime").Produces(restful.MIME_JSON)
	ws.Route(protect(ws.POST("/auth").To(r.authorize).Operation("authorizeRealtime").Consumes(restful.MIME_JSON, mimeForm).
		Doc("Signs a subscription of the live channel (the Pusher auth endpoint: point the client's channel authorization here). "+
			"The body is JSON or a form ("+mimeForm+", as pusher-js sends it). Events on the channel: call.ringing, call.answered, "+
			"call.ended, voicemail.received, transcript.ready, text.received, message_slip.received, notification.created, todo.created.").
		Reads(RealtimeAuthRequest{}).
		Returns(http.StatusOK, "The signature to subscribe with.", RealtimeAuth{}).
		Returns(http.StatusBadRequest, "The body is empty or not valid JSON.", ErrorBody{}).
		Returns(http.StatusRequestEntityTooLarge, "The body is too large.", ErrorBody{}).
		Returns(http.StatusUnsupportedMediaType, "The body is neither JSON nor a form.", ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, "socket_id or channel_name is missing or malformed.", ValidationErrorBody{}).
		Returns(http.StatusNotFound, "The live channel is off on this service (GET /me realtime.enabled is false).", ErrorBody{}),
		Access{Permission: auth.Read, NeedsIntegrations: true}))
	c.Add(ws)
	if r.rc.Sockets != nil {
		c.ServeMux.Handle("/app/", r.rc.Sockets)
	}
}

func (r realtimeResource) authorize(req *restful.Request, resp *restful.Response) {
	if r.rc.Sockets == nil {
		writeError(resp, http.StatusNotFound, "The live channel is off on this service: GET /me says realtime.enabled is false.")
		return
	}
	var in RealtimeAuthRequest
	mt, _, _ := mime.ParseMediaType(req.HeaderParameter("Content-Type"))
	if mt == mimeForm {
		req.Request.Body = http.MaxBytesReader(resp.ResponseWriter, req.Request.Body, 64<<10)
		if err := req.Request.ParseForm(); err != nil {
			writeError(resp, http.StatusBadRequest, "The body is not a valid form.")
			return
		}
		for name, dst := range map[string]**string{"socket_id": &in.SocketID, "channel_name": &in.ChannelName} {
			if vs, ok := req.Request.PostForm[name]; ok && len(vs) > 0 {
				v := vs[0]
				*dst = &v
			}
		}
	} else if !readJSONWithin(req, resp, &in, 64<<10) {
		return
	}
	fe := fieldErrors{}
	switch {
	case in.SocketID == nil:
		fe.add("socket_id", "The socket_id is required.")
	case !realtime.ValidSocketID(*in.SocketID):
		fe.add("socket_id", "The socket_id must be the one pusher:connection_established gave, digits.digits.")
	}
	switch {
	case in.ChannelName == nil:
		fe.add("channel_name", "The channel_name is required.")
	case !realtime.ValidChannelName(*in.ChannelName):
		fe.add("channel_name", "The channel_name must be a channel name (letters, digits, _-=@,.; up to 164).")
	}
	if fe.any() {
		writeValidation(resp, fe)
		return
	}
	p := principal(req)
	if *in.ChannelName != realtime.AccountChannel(p.Account.PublicID) {
		writeError(resp, http.StatusForbidden, "This key may only subscribe to its own account's channel, "+realtime.AccountChannel(p.Account.PublicID)+".")
		return
	}
	if err := r.store.GrantRealtime(req.Request.Context(), *in.SocketID, *in.ChannelName, p.KeyID, r.cfg.Clock.Now()); err != nil {
		r.internalError(req, resp, err)
		return
	}
	writeJSON(resp, http.StatusOK, RealtimeAuth{Auth: r.rc.Signer.Sign(*in.SocketID, *in.ChannelName)})
}

// realtimeInfo is GET /me's realtime: enabled when the channel is served, where clients reach it.
func realtimeInfo(rc *RealtimeConfig, baseURL, accountPublicID string) MeRealtime {
	rt := MeRealtime{Channel: realtime.AccountChannel(accountPublicID), Scheme: "wss", Port: 443}
	if u, err := url.Parse(baseURL); err == nil {
		rt.Host = u.Hostname()
		if u.Scheme == "http" {
			rt.Scheme, rt.Port = "ws", 80
		}
		if port, err := strconv.Atoi(u.Port()); err == nil {
			rt.Port = port
		}
	}
	if rc == nil {
		return rt
	}
	rt.Enabled, rt.Key = true, rc.Signer.Key
	if rc.PublicHost != "" {
		rt.Host = rc.PublicHost
	}
	if rc.PublicPort != 0 {
		rt.Port = rc.PublicPort
	}
	if rc.PublicScheme != "" {
		rt.Scheme = rc.PublicScheme
	}
	return rt
}
