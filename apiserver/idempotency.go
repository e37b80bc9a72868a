package apiserver

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/switchboard-dev/switchboard/internal/store"
)

// Idempotency-Key on POST routes, with Stripe's semantics. A route declares it (idempotent,
// idempotentInKube) and says where its work commits; the store side, and why the key is
// recorded in the work's own transaction, is internal/store/idempotency.go.

const (
	idempotencyKeyHeader      = "Idempotency-Key"
	idempotentReplayedHeader  = "Idempotent-Replayed"
	maxIdempotencyKeyLen      = 255
	metaIdempotent            = "switchboard.idempotent"
	idempotencyKeepFor        = 24 * time.Hour
	idempotencyLease          = 5 * time.Minute
	maxIdempotentBodyBytes    = maxBulkBodyBytes
	idempotencyConflictDoc    = "A request with the same Idempotency-Key is still running (or its answer was lost); nothing was done."
	idempotencyValidationDoc  = "The Idempotency-Key is empty, too long or not printable, or was used with another body or route."
	idempotencyKeyDescription = "Makes the POST safe to retry: a repeat with the same key and body within 24 hours replays the " +
		"first answer (with Idempotent-Replayed: true) instead of doing the work again. At most 255 printable ASCII characters, " +
		"per account; for example a UUID."
)

// idempotencyKeyParam declares the header on a route.
func idempotencyKeyParam() *restful.Parameter {
	return restful.HeaderParameter(idempotencyKeyHeader, idempotencyKeyDescription).DataType("string").
		MinLength(1).MaxLength(maxIdempotencyKeyLen).Pattern(`^[\x20-\x7e]+$`)
}

// idempotentWork is where a route declared idempotent does its work, and so what commits
// the key's claim.
type idempotentWork string

const (
	// workInStore: the work is a PostgreSQL unit of work, and the store operation doing it
	// takes the claim and commits it in the same transaction.
	workInStore idempotentWork = "store"
	// workInKube: the work is a kube-apiserver write, with no transaction to join. The claim
	// is completed when the answer is saved, after the write succeeded; a crash between the
	// two lets a repeat after the lease do the write again (a create then answers as a
	// create would, a rotation issues another secret).
	workInKube idempotentWork = "kube"
)

// claimedHandler is the handler of a route whose work is in the store: it passes claim (nil
// when no Idempotency-Key was sent) to the store operation that commits the work.
type claimedHandler func(req *restful.Request, resp *restful.Response, claim *store.IdempotencyClaim)

// idempotent declares that a POST route takes an Idempotency-Key and that its work commits
// the key's claim (h receives it): the route's metadata, its header and its 409/422 in the
// description, and the route function that claims the key around h. The route function runs
// after protect's filters, so a refusal of access is not kept for the key. Call it right
// after ws.POST: a route's own 409 or 422 text, declared later, replaces this.
func (s *Server) idempotent(rb *restful.RouteBuilder, h claimedHandler) *restful.RouteBuilder {
	return declareIdempotent(rb, workInStore).To(func(req *restful.Request, resp *restful.Response) {
		s.runIdempotent(req, resp, workInStore, h)
	})
}

// idempotentInKube is idempotent for a route whose work is a kube-apiserver write
// (workInKube: the saved answer completes the claim).
func (s *Server) idempotentInKube(rb *restful.RouteBuilder, h restful.RouteFunction) *restful.RouteBuilder {
	return declareIdempotent(rb, workInKube).To(func(req *restful.Request, resp *restful.Response) {
		s.runIdempotent(req, resp, workInKube, func(req *restful.Request, resp *restful.Response, _ *store.IdempotencyClaim) {
			h(req, resp)
		})
	})
}

func declareIdempotent(rb *restful.RouteBuilder, work idempotentWork) *restful.RouteBuilder {
	return rb.Metadata(metaIdempotent, work).Param(idempotencyKeyParam()).
		Returns(http.StatusConflict, idempotencyConflictDoc, ErrorBody{}).
		Returns(http.StatusUnprocessableEntity, idempotencyValidationDoc, ValidationErrorBody{})
}

// errClaimNotCommitted: a route declared workInStore answered success without its work
// committing the claim, so a crash before the answer was saved would let a repeat do the
// work again. A programming error, reported and not shown to the client.
var errClaimNotCommitted = errors.New("idempotent route's work committed without its Idempotency-Key claim")

// runIdempotent runs h with the request's Idempotency-Key claimed (claim nil when no key
// was sent), then keeps or releases the key by h's answer.
func (s *Server) runIdempotent(req *restful.Request, resp *restful.Response, work idempotentWork, h claimedHandler) {
	values, sent := req.Request.Header[http.CanonicalHeaderKey(idempotencyKeyHeader)]
	p := principal(req)
	if !sent || p == nil {
		h(req, resp, nil)
		return
	}
	if msg := idempotencyKeyProblem(values); msg != "" {
		writeValidation(resp, fieldErrors{idempotencyKeyHeader: {msg}})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(resp.ResponseWriter, req.Request.Body, maxIdempotentBodyBytes))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			writeError(resp, http.StatusRequestEntityTooLarge, "The body is too large.")
			return
		}
		writeError(resp, http.StatusBadRequest, "The body could not be read.")
		return
	}
	req.Request.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	ctx := req.Request.Context()
	res, err := s.store.ClaimIdempotencyKey(ctx, store.IdempotencyRequest{
		AccountID: p.Account.ID, Key: values[0], Route: req.Request.Method + " " + req.SelectedRoutePath(), BodySHA256: sum[:],
	}, s.cfg.Clock.Now(), idempotencyLease, idempotencyKeepFor)
	if err != nil {
		s.internalError(req, resp, err)
		return
	}
	switch res.Outcome {
	case store.ClaimReplay:
		writeRecorded(resp, res.Response, true)
		return
	case store.ClaimOtherRoute:
		writeValidation(resp, fieldErrors{idempotencyKeyHeader: {"This Idempotency-Key was used with another request path or method; use a new key."}})
		return
	case store.ClaimOtherBody:
		writeValidation(resp, fieldErrors{idempotencyKeyHeader: {"This Idempotency-Key was used with another body; use a new key."}})
		return
	case store.ClaimInFlight:
		writeError(resp, http.StatusConflict, "A request with this Idempotency-Key is still running; retry after it finishes.")
		return
	case store.ClaimUnanswered:
		writeError(resp, http.StatusConflict, "A request with this Idempotency-Key made its changes but its answer was lost; "+
			"check the result and use a new key.")
		return
	}

	claim := res.Claim
	rec := &recordedResponse{header: http.Header{}}
	real := resp.ResponseWriter
	resp.ResponseWriter = rec
	defer func() {
		if reason := recover(); reason != nil {
			// The handler failed (recoverPanic answers 500): forget the claim unless work committed.
			resp.ResponseWriter = real
			_ = s.store.ReleaseIdempotencyKey(ctx, claim)
			panic(reason)
		}
	}()
	h(req, resp, claim)
	resp.ResponseWriter = real

	saved := store.SavedResponse{Status: rec.statusOr200(), Header: rec.header, Body: rec.body.Bytes()}
	switch {
	case claim.Lost():
		// A repeat took the key over after the lease ran out; this request's transaction
		// rolled back, so it changed nothing.
		saved = store.SavedResponse{Status: http.StatusConflict, Header: http.Header{"Content-Type": {restful.MIME_JSON}},
			Body: []byte(`{"message":"A request with this Idempotency-Key is still running; retry after it finishes."}` + "\n")}
	case keepsAnswer(saved.Status):
		if claimSkipped(work, saved.Status, claim) {
			s.cfg.Log.Error(errClaimNotCommitted, "idempotency guarantee broken", "route", req.Request.Method+" "+req.SelectedRoutePath())
		}
		if err := s.store.CompleteIdempotencyKey(ctx, claim, saved); err != nil {
			// The work is done and committed; its answer is still the right one to give.
			s.cfg.Log.Error(err, "idempotency key answer not saved", "route", req.SelectedRoutePath())
		}
	default:
		if err := s.store.ReleaseIdempotencyKey(ctx, claim); err != nil {
			s.cfg.Log.Error(err, "idempotency key not released", "route", req.SelectedRoutePath())
		}
	}
	writeRecorded(resp, saved, false)
}

// claimSkipped: a route whose work is in the store answered success, yet no unit of work
// committed the claim.
func claimSkipped(work idempotentWork, status int, claim *store.IdempotencyClaim) bool {
	return work == workInStore && status >= 200 && status < 300 && !claim.Committed()
}

// idempotencyKeyProblem is why the header's values are not a usable key, or "".
func idempotencyKeyProblem(values []string) string {
	switch {
	case len(values) != 1:
		return "Send one Idempotency-Key header."
	case values[0] == "":
		return "The Idempotency-Key is empty."
	case len(values[0]) > maxIdempotencyKeyLen:
		return "The Idempotency-Key is longer than 255 characters."
	}
	for i := 0; i < len(values[0]); i++ {
		if c := values[0][i]; c < 0x20 || c > 0x7e {
			return "The Idempotency-Key must be printable ASCII characters."
		}
	}
	return ""
}

// keepsAnswer: like Stripe, answers of requests that ran to an end (2xx, 4xx) are kept;
// 409 and 429 (try again later) and 5xx (failed on our side) are not, so a repeat runs.
func keepsAnswer(status int) bool {
	return status >= 200 && status < 500 && status != http.StatusConflict && status != http.StatusTooManyRequests
}

func writeRecorded(resp *restful.Response, r store.SavedResponse, replayed bool) {
	for name, values := range r.Header {
		resp.Header()[name] = values
	}
	if replayed {
		resp.Header().Set(idempotentReplayedHeader, "true")
	}
	resp.WriteHeader(r.Status)
	_, _ = resp.Write(r.Body)
}

// recordedResponse keeps a handler's answer until the key's record is settled.
type recordedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recordedResponse) Header() http.Header { return r.header }

func (r *recordedResponse) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recordedResponse) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recordedResponse) statusOr200() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
