package apiserver

import (
	"errors"
	"html/template"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	openapi "github.com/swaggest/openapi-go"

	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// HTMLPage documents a web page response.
type HTMLPage struct{}

// SetupContentUnit declares the HTML content.
func (HTMLPage) SetupContentUnit(cu *openapi.ContentUnit) { cu.ContentType = "text/html" }

// sharedPagesResource serves the voicemail pages that voicemail.received events link to
// (links.shared_page). The signed link is the proof of access, so no API key is needed.
type sharedPagesResource struct{ *Server }

func (r sharedPagesResource) AddToContainer(c *restful.Container) {
	r.allowAnonymous(APIRoot + "/shared/")
	ws := new(restful.WebService).Path(APIRoot + "/shared").Produces("*/*")
	ws.Route(ws.GET("/voicemails/{recording}").To(r.voicemailPage).Operation("getSharedVoicemailPage").
		Doc("A page where the holder of the link hears a voicemail and reads its transcript (links.shared_page of "+
			"voicemail.received). It stops working when the number's link lifetime ends, when the owner closes pages "+
			"already sent, or when the recording is deleted.").
		Param(ws.PathParameter("recording", "The voicemail recording's public_id.").DataType("string")).
		Param(ws.QueryParameter("issued", "When the link was made, in Unix seconds (part of the signed link).").DataType("integer").Required(true)).
		Param(ws.QueryParameter("expires", "When the link stops working, in Unix seconds (part of the signed link).").DataType("integer").Required(true)).
		Param(ws.QueryParameter("sig", "The link's signature (part of the signed link).").DataType("string").Required(true)).
		ReturnsWithHeaders(http.StatusOK, "The page.", HTMLPage{}, sharedPageHeaders).
		Returns(http.StatusForbidden, "The link is malformed, altered, expired or closed by the owner.", ErrorBody{}).
		Returns(http.StatusNotFound, "The voicemail has been deleted.", ErrorBody{}))
	c.Add(ws)
}

func (r sharedPagesResource) voicemailPage(req *restful.Request, resp *restful.Response) {
	publicID := req.PathParameter("recording")
	now := r.cfg.Clock.Now()
	issued, err := links.CheckVoicemailPage(r.cfg.Media.SigningKey, publicID, req.QueryParameter("issued"),
		req.QueryParameter("expires"), req.QueryParameter("sig"), now)
	switch {
	case errors.Is(err, links.ErrExpired):
		writeError(resp, http.StatusForbidden, "This voicemail link has expired.")
		return
	case err != nil:
		writeError(resp, http.StatusForbidden, "This voicemail link is not valid: it is incomplete or has been altered.")
		return
	}
	page, err := r.store.GetVoicemailPage(req.Request.Context(), publicID)
	if errors.Is(err, store.ErrNotFound) {
		writeError(resp, http.StatusNotFound, "This voicemail has been deleted.")
		return
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if page.SharedLinksClosedFrom != nil && !issued.After(*page.SharedLinksClosedFrom) {
		writeError(resp, http.StatusForbidden, "The account owner has closed this voicemail link.")
		return
	}
	h := resp.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "private, no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'")
	resp.WriteHeader(http.StatusOK)
	audio := recordingsResource(r).recordingLink(publicID, now.Add(r.cfg.Media.linkTTL()))
	_ = voicemailPageTemplate.Execute(resp, map[string]any{"Page": page, "Audio": audio,
		"Received": page.ReceivedAt.UTC().Format(time.RFC1123)})
}

var voicemailPageTemplate = template.Must(template.New("voicemail").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Voicemail for {{.Page.AccountName}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}
audio{width:100%}.meta{color:#555}.transcript{white-space:pre-wrap;background:#f6f6f6;padding:1rem;border-radius:.5rem}</style>
</head><body>
<h1>Voicemail for {{.Page.AccountName}}</h1>
<p class="meta">From {{if .Page.CallerName}}{{.Page.CallerName}} ({{.Page.CallerE164}}){{else}}{{.Page.CallerE164}}{{end}}
{{if .Page.NumberLabel}} to {{.Page.NumberLabel}}{{end}}, {{.Received}}, {{.Page.DurationSeconds}} seconds.</p>
<audio controls preload="none" src="{{.Audio}}"></audio>
<h2>Transcript</h2>
{{if .Page.TranscriptText}}<div class="transcript">{{.Page.TranscriptText}}</div>
{{else}}<p class="meta">No transcript yet.</p>{{end}}
</body></html>
`))

// sharedPageHeaders keep the page's link (a secret) out of Referer and the page self-contained.
var sharedPageHeaders = map[string]restful.Header{
	"Referrer-Policy":         {Items: &restful.Items{Type: "string"}, Description: "no-referrer: the link is a secret."},
	"X-Content-Type-Options":  {Items: &restful.Items{Type: "string"}, Description: "nosniff."},
	"Content-Security-Policy": {Items: &restful.Items{Type: "string"}, Description: "The page loads nothing but its audio."},
}
