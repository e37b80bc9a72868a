package apiserver

import (
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	openapi "github.com/swaggest/openapi-go"

	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
)

// AudioBody documents an audio response (the recording's own type, e.g. audio/wav).
type AudioBody struct{}

// SetupContentUnit declares the binary audio content.
func (AudioBody) SetupContentUnit(cu *openapi.ContentUnit) {
	cu.ContentType = "audio/*"
	cu.Format = "binary"
}

// RangeErrorBody documents the plain-text answer to a Range outside the audio.
type RangeErrorBody struct{}

// SetupContentUnit declares the plain-text content.
func (RangeErrorBody) SetupContentUnit(cu *openapi.ContentUnit) {
	cu.ContentType = "text/plain"
}

// mediaResource serves the audio behind signed recording links. The signature in the link
// is the proof of access, so the route is outside API-key authentication.
type mediaResource struct{ *Server }

func (r mediaResource) AddToContainer(c *restful.Container) {
	r.allowAnonymous(APIRoot + "/media/")
	// Audio players send all kinds of Accept headers; errors are still JSON.
	ws := new(restful.WebService).Path(APIRoot + "/media").Produces("*/*")
	ws.Route(ws.GET("/recordings/{recording}").To(r.recordingAudio).Operation("getRecordingAudio").
		Doc("The recording's audio, through a signed link from GET /recordings/{recording}/stream-url. "+
			"Needs no API key; supports Range requests.").
		Param(ws.PathParameter("recording", "The recording's public_id.").DataType("string")).
		Param(ws.QueryParameter("expires", "When the link stops working, in Unix seconds (part of the signed link).").DataType("integer").Required(true)).
		Param(ws.QueryParameter("sig", "The link's signature (part of the signed link).").DataType("string").Required(true)).
		ReturnsWithHeaders(http.StatusOK, "The audio.", AudioBody{}, audioHeaders(false)).
		ReturnsWithHeaders(http.StatusPartialContent, "The requested byte range of the audio.", AudioBody{}, audioHeaders(true)).
		ReturnsWithHeaders(http.StatusNotModified, "The audio has not changed since the copy the client holds.", nil, audioHeaders(false)).
		Returns(http.StatusForbidden, "The link is malformed, altered or expired; request a new one.", ErrorBody{}).
		Returns(http.StatusNotFound, "The recording has been deleted.", ErrorBody{}).
		ReturnsWithHeaders(http.StatusPreconditionFailed, "A precondition header does not hold.", nil, audioHeaders(false)).
		ReturnsWithHeaders(http.StatusRequestedRangeNotSatisfiable, "The Range lies outside the audio.", RangeErrorBody{}, audioHeaders(true)).
		Returns(http.StatusServiceUnavailable, "The service is briefly unavailable; see Retry-After.", ErrorBody{}).
		Filter(retryUnavailableRead))
	c.Add(ws)
}

func (r mediaResource) recordingAudio(req *restful.Request, resp *restful.Response) {
	publicID := req.PathParameter("recording")
	switch checkRecordingLink(r.cfg.Media.SigningKey, publicID, req.QueryParameter("expires"), req.QueryParameter("sig"), r.cfg.Clock.Now()) {
	case linkInvalid:
		writeError(resp, http.StatusForbidden, "This recording link is not valid: it is incomplete or has been altered. Request a new one with GET /recordings/{recording}/stream-url.")
		return
	case linkExpired:
		writeError(resp, http.StatusForbidden, "This recording link has expired. Request a new one with GET /recordings/{recording}/stream-url.")
		return
	}
	ctx := req.Request.Context()
	rec, err := r.store.GetRecordingForLink(ctx, publicID)
	if errors.Is(err, store.ErrNotFound) {
		writeError(resp, http.StatusNotFound, "This recording has been deleted.")
		return
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	if r.cfg.Media.Recordings == nil {
		r.internalError(req, resp, errors.New("recording links: no recording store is configured"))
		return
	}
	obj, err := r.cfg.Media.Recordings.Open(ctx, rec.StorageKey)
	if errors.Is(err, recordingstore.ErrNotFound) {
		writeError(resp, http.StatusNotFound, "This recording has been deleted.")
		return
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	defer func() { _ = obj.Close() }()

	h := resp.Header()
	h.Set("Content-Type", rec.ContentType)
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": rec.PublicID + recordingstore.Extension(rec.ContentType)}))
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// ServeContent answers Range and conditional requests; resp records the status for the log.
	// The write deadline moves with each chunk (media_deadline.go).
	http.ServeContent(newDeadlineExtendingWriter(resp, resp.ResponseWriter), req.Request, "", obj.ModTime, obj)
}

type linkCheck int

const (
	linkValid linkCheck = iota
	linkInvalid
	linkExpired
)

// checkRecordingLink decides whether a link's expires and sig prove access to publicID at now.
// The signature is checked before the expiry, so an altered expiry reads as altered.
func checkRecordingLink(key []byte, publicID, expires, sig string, now time.Time) linkCheck {
	if len(key) == 0 || publicID == "" || expires == "" || len(sig) != hex.EncodedLen(32) {
		return linkInvalid
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || exp <= 0 || strconv.FormatInt(exp, 10) != expires {
		return linkInvalid
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return linkInvalid
	}
	want, _ := hex.DecodeString(links.RecordingSignature(key, publicID, expires))
	if !hmac.Equal(got, want) {
		return linkInvalid
	}
	if now.Unix() >= exp {
		return linkExpired
	}
	return linkValid
}

// audioHeaders are the headers of the audio's answers (ETag and Last-Modified aside, which
// every HTTP client knows); withRange adds Content-Range.
func audioHeaders(withRange bool) map[string]restful.Header {
	text := &restful.Items{Type: "string"}
	h := map[string]restful.Header{
		"Accept-Ranges":          {Items: text, Description: "bytes: Range requests are supported."},
		"Content-Disposition":    {Items: text, Description: "inline, with the recording's file name."},
		"X-Content-Type-Options": {Items: text, Description: "nosniff."},
		"Referrer-Policy":        {Items: text, Description: "no-referrer: the link is a secret."},
	}
	if withRange {
		h["Content-Range"] = restful.Header{Items: text, Description: "The byte range sent, or the audio's length."}
	}
	return h
}
