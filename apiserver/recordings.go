package apiserver

import (
	"errors"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/links"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/transcription"
)

// DefaultLinkTTL is how long a recording link works (spec: Limits, recording link lifetime).
const DefaultLinkTTL = links.RecordingTTL

// MediaConfig configures recording links and the audio they serve.
type MediaConfig struct {
	// SigningKey is the server secret that signs recording links. Every replica must share
	// it; links made with another key are refused.
	SigningKey []byte
	// Recordings holds the audio.
	Recordings recordingstore.Store
	// LinkTTL is how long a link works; zero means DefaultLinkTTL.
	LinkTTL time.Duration
}

func (mc MediaConfig) linkTTL() time.Duration {
	if mc.LinkTTL > 0 {
		return mc.LinkTTL
	}
	return DefaultLinkTTL
}

// RecordingLink is GET /recordings/{recording}/stream-url.
type RecordingLink struct {
	URL       string    `json:"url" required:"true" format:"uri"`
	ExpiresAt time.Time `json:"expires_at" required:"true"`
}

// RecordingTranscript is GET /recordings/{recording}/transcript for a transcribed recording.
type RecordingTranscript struct {
	Status           string                       `json:"status" required:"true" enum:"pending,processing,completed,failed"`
	Text             string                       `json:"text" required:"true"`
	Language         string                       `json:"language" required:"true"`
	Minutes          int                          `json:"minutes" required:"true"`
	RatedAmountPence int64                        `json:"rated_amount_pence" required:"true"`
	SummaryStatus    string                       `json:"summary_status" required:"true" enum:"pending,processing,completed,failed,unavailable"`
	Summary          *string                      `json:"summary" required:"true"`
	Segments         []RecordingTranscriptSegment `json:"segments" required:"true"`
	Intent           *string                      `json:"intent" required:"true"`
	Sentiment        *string                      `json:"sentiment" required:"true" enum:"positive,neutral,negative"`
	Urgency          *string                      `json:"urgency" required:"true" enum:"low,normal,high"`
	ActionItems      []string                     `json:"action_items" required:"true"`
	CallbackNumber   *string                      `json:"callback_number" required:"true"`
}

// RecordingTranscriptSegment is one stretch of speech; start and end are seconds from the start.
type RecordingTranscriptSegment struct {
	Start   float64 `json:"start" required:"true"`
	End     float64 `json:"end" required:"true"`
	Speaker string  `json:"speaker" required:"true"`
	Text    string  `json:"text" required:"true"`
}

// NoTranscript is the empty object answered for a recording that has not been transcribed.
type NoTranscript struct {
	_ struct{} `additionalProperties:"false"`
}

// TranscriptOrEmpty documents GET /recordings/{recording}/transcript: the transcript, or {}.
type TranscriptOrEmpty struct{}

// JSONSchemaOneOf makes the schema oneOf the two shapes.
func (TranscriptOrEmpty) JSONSchemaOneOf() []any {
	return []any{RecordingTranscript{}, NoTranscript{}}
}

// TranscriptEstimate is GET /recordings/{recording}/transcript/estimate.
type TranscriptEstimate struct {
	// Available: the plan has transcription, it is switched on for the account and the recording exists.
	Available bool `json:"available" required:"true"`
	// Minutes billed: whole minutes rounded up, at least 1 for a recording with audio.
	Minutes int `json:"minutes" required:"true"`
	// CostPence is the part paid from the prepaid balance (after allowance and bundle minutes).
	CostPence       int64 `json:"cost_pence" required:"true"`
	RatePencePerMin int   `json:"rate_pence_per_min" required:"true"`
	// WithinAllowance: every minute comes from this month's plan allowance.
	WithinAllowance bool `json:"within_allowance" required:"true"`
	// BundleMinutes are the prepaid bundle minutes the account holds now.
	BundleMinutes int   `json:"bundle_minutes" required:"true"`
	BalancePence  int64 `json:"balance_pence" required:"true"`
	// Affordable: the balance covers cost_pence and today's spend stays within the daily limit.
	Affordable bool `json:"affordable" required:"true"`
	// ExistingStatus is the status of the recording's transcript, null when it has none.
	ExistingStatus *string `json:"existing_status" required:"true"`
}

type recordingsResource struct{ *Server }

func (r recordingsResource) AddToContainer(c *restful.Container) {
	ws := new(restful.WebService).Path(APIRoot + "/recordings").Produces(restful.MIME_JSON)
	recordingParam := ws.PathParameter("recording", "The recording's public_id (a call's recording_public_id).").DataType("string")
	read := Access{Permission: auth.Read, NeedsIntegrations: true}
	ws.Route(protect(ws.GET("/{recording}/stream-url").To(r.streamURL).Operation("getRecordingStreamUrl").Param(recordingParam).
		Doc("A signed link to the recording's audio, valid 10 minutes. Request a new link for each play or download.").
		Returns(http.StatusOK, "OK", RecordingLink{}).
		Returns(http.StatusNotFound, "No such recording on this account.", ErrorBody{}), read))
	ws.Route(protect(ws.GET("/{recording}/transcript").To(r.transcript).Operation("getRecordingTranscript").Param(recordingParam).
		Doc("The recording's transcript with its segments in order, or {} if it has not been transcribed.").
		Returns(http.StatusOK, "The transcript, or {} if not transcribed.", TranscriptOrEmpty{}).
		Returns(http.StatusNotFound, "No such recording on this account.", ErrorBody{}), read))
	ws.Route(protect(ws.GET("/{recording}/transcript/estimate").To(r.estimate).Operation("getRecordingTranscriptEstimate").Param(recordingParam).
		Doc("The price of transcribing the recording and whether the account can afford it now. "+
			"Minutes come from the plan's monthly allowance first, then prepaid bundle minutes, then the balance.").
		Returns(http.StatusOK, "OK", TranscriptEstimate{}).
		Returns(http.StatusNotFound, "No such recording on this account.", ErrorBody{}), read))
	c.Add(ws)

	// The signed links point at the audio route, served without an API key.
	mediaResource(r).AddToContainer(c)
}

func (r recordingsResource) streamURL(req *restful.Request, resp *restful.Response) {
	rec, err := r.store.GetRecording(req.Request.Context(), principal(req).Account.ID, req.PathParameter("recording"))
	if err != nil {
		r.respond(req, resp, "recording", nil, err)
		return
	}
	if len(r.cfg.Media.SigningKey) == 0 {
		r.internalError(req, resp, errors.New("recording links: no signing key is configured"))
		return
	}
	expires := r.cfg.Clock.Now().Add(r.cfg.Media.linkTTL()).Truncate(time.Second)
	writeJSON(resp, http.StatusOK, RecordingLink{
		URL:       r.recordingLink(rec.PublicID, expires),
		ExpiresAt: expires.UTC(),
	})
}

// recordingLink is the signed address of a recording's audio, working until expires.
func (r recordingsResource) recordingLink(publicID string, expires time.Time) string {
	return links.Recording(r.cfg.BaseURL, r.cfg.Media.SigningKey, publicID, expires)
}

func (r recordingsResource) transcript(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	acct := principal(req).Account.ID
	rec, err := r.store.GetRecording(ctx, acct, req.PathParameter("recording"))
	if err != nil {
		r.respond(req, resp, "recording", nil, err)
		return
	}
	t, err := r.store.GetTranscript(ctx, acct, rec.ID)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(resp, http.StatusOK, NoTranscript{})
		return
	}
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	out := RecordingTranscript{
		Status: t.Status, Text: t.Text, Language: t.Language, Minutes: t.Minutes, RatedAmountPence: t.RatedAmountPence,
		SummaryStatus: t.SummaryStatus, Summary: t.Summary, Intent: t.Intent, Sentiment: t.Sentiment, Urgency: t.Urgency,
		ActionItems: t.ActionItems, CallbackNumber: t.CallbackNumber,
		Segments: make([]RecordingTranscriptSegment, len(t.Segments)),
	}
	for i, sg := range t.Segments {
		out.Segments[i] = RecordingTranscriptSegment{Start: sg.StartSeconds, End: sg.EndSeconds, Speaker: sg.Speaker, Text: sg.Text}
	}
	writeJSON(resp, http.StatusOK, out)
}

func (r recordingsResource) estimate(req *restful.Request, resp *restful.Response) {
	ctx := req.Request.Context()
	p := principal(req)
	rec, err := r.store.GetRecording(ctx, p.Account.ID, req.PathParameter("recording"))
	if err != nil {
		r.respond(req, resp, "recording", nil, err)
		return
	}
	svc := transcription.Service{Store: r.store, Clock: r.cfg.Clock}
	q, err := svc.Estimate(ctx, p.Account, rec)
	if err != nil {
		r.internalError(req, resp, err)
		return
	}
	charge, in := q.Charge, q.Inputs
	writeJSON(resp, http.StatusOK, TranscriptEstimate{
		Available:       q.Available,
		Minutes:         charge.Minutes,
		CostPence:       charge.CostPence,
		RatePencePerMin: in.RatePencePerMin,
		WithinAllowance: charge.WithinAllowance,
		BundleMinutes:   in.BundleMinutes,
		BalancePence:    in.BalancePence,
		Affordable:      charge.Affordable,
		ExistingStatus:  in.ExistingStatus,
	})
}
