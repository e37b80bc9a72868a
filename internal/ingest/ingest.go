// Package ingest is the internal API through which the telephony platform reports what
// happened: a call ended (with its recording or voicemail), a text arrived, a message slip was
// left. It listens on its own address (127.0.0.1:8081 by default), never on the public port,
// and takes a platform token. Each report is stored and its webhook events queued in the same
// transaction (the outbox), so nothing recorded is left unannounced.
package ingest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/switchboard-dev/switchboard/internal/auth"
	"github.com/switchboard-dev/switchboard/internal/numbers"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/recordingstore"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/webhook/events"
)

// DefaultAddr is where the ingestion API listens unless configured.
const DefaultAddr = "127.0.0.1:8081"

// maxAudioBytes bounds an uploaded recording (about 20 minutes of 8 kHz 16-bit WAV).
const maxAudioBytes = 20 << 20

// Config configures the ingestion API.
type Config struct {
	// Token is the platform's bearer token; requests without it get 401.
	Token string
	// Links are the addresses events point at.
	Links events.Links
	// LinkSigningKey signs voicemail pages (the same key the API checks them with).
	LinkSigningKey []byte
	Recordings     recordingstore.Store
	Clock          clock.PassiveClock
	Log            logr.Logger
	// RecordedCall, when set, is called after a recorded call (not a voicemail) is stored,
	// e.g. to start automatic transcription. Its error is logged, not returned to the platform.
	RecordedCall func(ctx context.Context, accountID, callID int64) error
	// CallBatchSize is the most call reports recorded in one transaction (default
	// DefaultCallBatchSize); CallBatchesAtOnce how many such transactions run at once
	// (default DefaultCallBatchesAtOnce). See call_batch.go.
	CallBatchSize     int
	CallBatchesAtOnce int
}

// Handler serves the ingestion API.
type Handler struct {
	cfg     Config
	store   *store.Store
	numbers *numbers.Service
	mux     *http.ServeMux
	// callGroups records call reports in groups (call_batch.go).
	callGroups *store.Batcher[callJob, callOutcome]
}

// New builds the handler.
func New(cfg Config, st *store.Store) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.CallBatchSize <= 0 {
		cfg.CallBatchSize = DefaultCallBatchSize
	}
	if cfg.CallBatchesAtOnce <= 0 {
		cfg.CallBatchesAtOnce = DefaultCallBatchesAtOnce
	}
	h := &Handler{cfg: cfg, store: st, numbers: numbers.New(st, cfg.Clock), mux: http.NewServeMux()}
	h.callGroups = store.NewBatcher(cfg.CallBatchSize, cfg.CallBatchesAtOnce, h.recordCallGroup)
	h.mux.HandleFunc("GET /platform/v1/numbers", h.listNumbers)
	h.mux.HandleFunc("POST /platform/v1/calls", h.reportCall)
	h.mux.HandleFunc("POST /platform/v1/texts", h.reportText)
	h.mux.HandleFunc("POST /platform/v1/message-slips", h.reportSlip)
	h.mux.HandleFunc("POST /platform/v1/call-progress", h.reportProgress)
	h.registerNumberRoutes()
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := auth.BearerToken(r.Header.Get("Authorization"))
	if !ok || h.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(h.cfg.Token)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Send the platform token as: Authorization: Bearer <token>."})
		return
	}
	h.serveCounted(w, r)
}

// problems collects field errors, answered as 422 {message, errors}.
type problems map[string][]string

func (p problems) add(field, msg string) { p[field] = append(p[field], msg) }

// phoneNumbers reads a report's to and from numbers as E.164, noting each that is not a
// phone number.
func (p problems) phoneNumbers(to, from string) (toE164, fromE164 string) {
	toE164, ok := phone.ToE164(to)
	if !ok {
		p.add("to", "must be a phone number")
	}
	fromE164, ok = phone.ToE164(from)
	if !ok {
		p.add("from", "must be a phone number")
	}
	return toE164, fromE164
}

// plainText notes a text field PostgreSQL cannot store (text cannot hold a NUL character), so
// such a report gets 422 instead of failing in the database.
func (p problems) plainText(field string, values ...*string) {
	for _, v := range values {
		if v != nil && strings.ContainsRune(*v, 0) {
			p.add(field, "must not contain NUL characters")
			return
		}
	}
}

// maxCallSeconds bounds a call's reported durations (a week; the columns are 32-bit).
const maxCallSeconds = 7 * 24 * 3600

// requireTime notes a missing timestamp.
func (p problems) requireTime(field string, t time.Time) {
	if t.IsZero() {
		p.add(field, "is required (RFC 3339)")
	}
}

// answered writes the 422 when there are problems, and says whether it did.
func (p problems) answered(w http.ResponseWriter) bool {
	if len(p) == 0 {
		return false
	}
	writeProblems(w, p)
	return true
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeProblems(w http.ResponseWriter, p problems) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "The report has invalid fields.", "errors": p})
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503 while the database is unreachable.
const unavailableRetryAfter = "2"

func (h *Handler) internalError(w http.ResponseWriter, r *http.Request, err error) {
	if store.IsUnavailable(err) {
		// Not the report's fault: the platform sends it again after Retry-After.
		h.cfg.Log.Info("database unavailable", "path", r.URL.Path, "error", err.Error())
		w.Header().Set("Retry-After", unavailableRetryAfter)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "The service is briefly unavailable; send the request again in a few seconds."})
		return
	}
	h.cfg.Log.Error(err, "platform report failed", "path", r.URL.Path)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"message": "The report could not be stored; send it again."})
}

func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAudioBytes*4/3+64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"message": fmt.Sprintf("The report is larger than %d bytes.", maxErr.Limit)})
			return false
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "The body is not a valid report: " + err.Error()})
		return false
	}
	return true
}

// number finds the live number a report is for; it answers 404 itself when there is none.
func (h *Handler) number(ctx context.Context, w http.ResponseWriter, tx *store.Tx, e164 string) (store.LiveNumber, bool, error) {
	n, err := tx.LiveNumberByE164(ctx, e164)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No live number " + e164 + "."})
		return n, false, nil
	}
	return n, err == nil, err
}

// liveNumber finds the number a text or slip is for; when it answers false it has written the
// response (404, or 500 when the database fails).
func (h *Handler) liveNumber(w http.ResponseWriter, r *http.Request, e164 string) (store.LiveNumber, bool) {
	var n store.LiveNumber
	var found bool
	err := store.RetryRead(r.Context(), func(ctx context.Context) error {
		return h.store.InTx(ctx, func(tx *store.Tx) error {
			var err error
			n, found, err = h.number(ctx, w, tx, e164)
			return err
		})
	})
	if err != nil {
		h.internalError(w, r, err)
		return n, false
	}
	return n, found
}

func (h *Handler) listNumbers(w http.ResponseWriter, r *http.Request) {
	var numbers []string
	err := store.RetryRead(r.Context(), func(ctx context.Context) (err error) {
		numbers, err = h.store.ListLiveNumbers(ctx)
		return err
	})
	if err != nil {
		h.internalError(w, r, err)
		return
	}
	if numbers == nil {
		numbers = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"numbers": numbers})
}

// CallReport is the body of POST /platform/v1/calls.
type CallReport struct {
	// PlatformRef is the platform's id of the call; a report sent again is recorded once.
	PlatformRef     string           `json:"platform_ref"`
	To              string           `json:"to"`
	From            string           `json:"from"`
	CallerName      string           `json:"caller_name"`
	Disposition     string           `json:"disposition"`
	StartedAt       time.Time        `json:"started_at"`
	DurationSeconds int              `json:"duration_seconds"`
	TalkSeconds     int              `json:"talk_seconds"`
	ForwardSeconds  int              `json:"forward_seconds"`
	RatedPence      int64            `json:"rated_pence"`
	Filtered        bool             `json:"filtered"`
	Emergency       bool             `json:"emergency"`
	Answer          *AnswerReport    `json:"answer"`
	Recording       *RecordingReport `json:"recording"`
}

// AnswerReport says who answered.
type AnswerReport struct {
	StaffMember *string `json:"staff_member"`
	Department  *string `json:"department"`
	TargetType  *string `json:"target_type"`
	TargetLabel *string `json:"target_label"`
}

// RecordingReport carries the call's recording or voicemail.
type RecordingReport struct {
	Kind            string `json:"kind"` // call or voicemail
	ContentType     string `json:"content_type"`
	DurationSeconds int    `json:"duration_seconds"`
	// AudioBase64 is the audio itself, base64-encoded.
	AudioBase64 string `json:"audio_base64"`
}

// CallReceipt is the answer to a call report.
type CallReceipt struct {
	CallPublicID      string   `json:"call_public_id"`
	RecordingPublicID *string  `json:"recording_public_id"`
	Events            []string `json:"events"`
	Duplicate         bool     `json:"duplicate"`
}

var dispositions = []string{"answered", "no-answer", "voicemail", "failed", "busy", "blocked"}

func (h *Handler) reportCall(w http.ResponseWriter, r *http.Request) {
	var in CallReport
	if !decode(w, r, &in) {
		return
	}
	p := problems{}
	to, from := p.phoneNumbers(in.To, in.From)
	if !contains(dispositions, in.Disposition) {
		p.add("disposition", "must be one of "+strings.Join(dispositions, ", "))
	}
	p.requireTime("started_at", in.StartedAt)
	for field, v := range map[string]int{"duration_seconds": in.DurationSeconds, "talk_seconds": in.TalkSeconds, "forward_seconds": in.ForwardSeconds} {
		if v < 0 {
			p.add(field, "must not be negative")
		}
		if v > maxCallSeconds {
			p.add(field, fmt.Sprintf("must be at most %d", maxCallSeconds))
		}
	}
	if in.RatedPence < 0 {
		p.add("rated_pence", "must not be negative")
	}
	if in.TalkSeconds > in.DurationSeconds {
		p.add("talk_seconds", "must not exceed duration_seconds")
	}
	if len(in.PlatformRef) > 200 || len(in.CallerName) > 200 {
		p.add("platform_ref", "platform_ref and caller_name must be at most 200 characters")
	}
	p.plainText("platform_ref", &in.PlatformRef)
	p.plainText("caller_name", &in.CallerName)
	if a := in.Answer; a != nil {
		p.plainText("answer", a.StaffMember, a.Department, a.TargetType, a.TargetLabel)
	}
	var audio []byte
	if rec := in.Recording; rec != nil {
		if rec.Kind != "call" && rec.Kind != "voicemail" {
			p.add("recording.kind", "must be call or voicemail")
		}
		if rec.ContentType == "" {
			rec.ContentType = "audio/wav"
		}
		if !strings.HasPrefix(rec.ContentType, "audio/") {
			p.add("recording.content_type", "must be an audio type such as audio/wav")
		}
		var err error
		audio, err = base64.StdEncoding.DecodeString(rec.AudioBase64)
		switch {
		case err != nil || len(audio) == 0:
			p.add("recording.audio_base64", "must be the audio, base64-encoded")
		case len(audio) > maxAudioBytes:
			p.add("recording.audio_base64", fmt.Sprintf("must be at most %d bytes of audio", maxAudioBytes))
		}
		if rec.DurationSeconds < 0 {
			p.add("recording.duration_seconds", "must not be negative")
		}
	}
	if p.answered(w) {
		return
	}

	ctx := r.Context()
	job := callJob{in: in, to: to, from: from, now: h.cfg.Clock.Now()}
	if rec := in.Recording; rec != nil {
		// The audio is stored before the report's transaction: a report whose transaction
		// then fails leaves an unreferenced object, never a recording without audio.
		n, found := h.liveNumber(w, r, to)
		if !found {
			return
		}
		key := fmt.Sprintf("%s/%s%s", n.AccountPublicID, uuid.NewString(), recordingstore.Extension(rec.ContentType))
		if err := h.cfg.Recordings.Put(ctx, key, bytes.NewReader(audio)); err != nil {
			h.internalError(w, r, fmt.Errorf("store the recording: %w", err))
			return
		}
		job.recording = &store.NewRecording{Kind: rec.Kind, StorageKey: key, ContentType: rec.ContentType,
			DurationSeconds: rec.DurationSeconds, SizeBytes: int64(len(audio))}
	}
	out, err := h.callGroups.Do(ctx, job)
	switch {
	case err != nil:
		h.internalError(w, r, err)
	case !out.found:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No live number " + to + "."})
	case out.receipt.Duplicate:
		writeJSON(w, http.StatusOK, out.receipt)
	default:
		if in.Recording != nil && in.Recording.Kind == "call" && h.cfg.RecordedCall != nil {
			if err := h.cfg.RecordedCall(ctx, out.accountID, out.callID); err != nil {
				h.cfg.Log.Error(err, "after a recorded call", "call", out.receipt.CallPublicID)
			}
		}
		writeJSON(w, http.StatusCreated, out.receipt)
	}
}

// TextReport is the body of POST /platform/v1/texts: a text message received on a number.
type TextReport struct {
	To         string    `json:"to"`
	From       string    `json:"from"`
	Body       string    `json:"body"`
	ReceivedAt time.Time `json:"received_at"`
}

func (h *Handler) reportText(w http.ResponseWriter, r *http.Request) {
	var in TextReport
	if !decode(w, r, &in) {
		return
	}
	p := problems{}
	to, from := p.phoneNumbers(in.To, in.From)
	if in.Body == "" || len(in.Body) > 5000 {
		p.add("body", "must be 1 to 5000 characters")
	}
	p.plainText("body", &in.Body)
	p.requireTime("received_at", in.ReceivedAt)
	if p.answered(w) {
		return
	}
	n, found := h.liveNumber(w, r, to)
	if !found {
		return
	}
	msg, err := h.store.AddSMSMessage(r.Context(), store.NewSMSMessage{AccountID: n.AccountID, NumberID: n.ID,
		CounterpartyE164: from, Direction: "inbound", Body: in.Body, ReceivedAt: in.ReceivedAt.UTC()})
	if err != nil {
		h.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"conversation_public_id": msg.ConversationPublicID})
}

// SlipReport is the body of POST /platform/v1/message-slips.
type SlipReport struct {
	To         string    `json:"to"`
	From       string    `json:"from"`
	CallerName string    `json:"caller_name"`
	Department string    `json:"department"`
	ReceivedAt time.Time `json:"received_at"`
}

func (h *Handler) reportSlip(w http.ResponseWriter, r *http.Request) {
	var in SlipReport
	if !decode(w, r, &in) {
		return
	}
	p := problems{}
	to, from := p.phoneNumbers(in.To, in.From)
	p.requireTime("received_at", in.ReceivedAt)
	if len(in.CallerName) > 200 || len(in.Department) > 200 {
		p.add("caller_name", "caller_name and department must be at most 200 characters")
	}
	p.plainText("caller_name", &in.CallerName)
	p.plainText("department", &in.Department)
	if p.answered(w) {
		return
	}
	n, found := h.liveNumber(w, r, to)
	if !found {
		return
	}
	slip, err := h.store.CreateMessageSlip(r.Context(), store.NewMessageSlip{AccountID: n.AccountID, NumberID: &n.ID,
		FromE164: from, CallerName: in.CallerName, Department: in.Department, ReceivedAt: in.ReceivedAt.UTC()})
	if err != nil {
		h.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"message_slip_public_id": slip.PublicID})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
