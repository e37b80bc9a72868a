package ingest

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/numbers"
)

// maxNumberBody bounds a number or routing request; routing at its limits is well under it.
const maxNumberBody = 64 << 10

// registerNumberRoutes adds the routes through which the platform adds, changes, ports and
// releases numbers and sets their routing. Each only translates HTTP; internal/numbers decides.
func (h *Handler) registerNumberRoutes() {
	h.mux.HandleFunc("POST /platform/v1/numbers", h.provisionNumber)
	h.mux.HandleFunc("GET /platform/v1/numbers/{number}", h.getNumber)
	h.mux.HandleFunc("PATCH /platform/v1/numbers/{number}", h.updateNumber)
	h.mux.HandleFunc("POST /platform/v1/numbers/{number}/port", h.portNumber)
	h.mux.HandleFunc("POST /platform/v1/numbers/{number}/release", h.releaseNumber)
	h.mux.HandleFunc("PUT /platform/v1/numbers/{number}/routing", h.setRouting)
}

// PortRequest is the body of POST /platform/v1/numbers/{number}/port.
type PortRequest struct {
	Direction string     `json:"direction"` // in or out
	Step      string     `json:"step"`      // started (out only), completed, cancelled
	ReleaseAt *time.Time `json:"release_at"`
}

// ReleaseRequest is the body of POST /platform/v1/numbers/{number}/release.
type ReleaseRequest struct {
	ReleaseAt *time.Time `json:"release_at"`
}

// decodeSmall reads a small JSON body: over maxNumberBody is 413, anything else unreadable 400.
func decodeSmall(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxNumberBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"message": "The body is over the limit of 64 KiB."})
		return false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "The body is not a valid request: " + err.Error()})
		return false
	}
	return true
}

// numberAnswer writes what the service answered: the value, or its error as 422, 404 or 409.
func (h *Handler) numberAnswer(w http.ResponseWriter, r *http.Request, v any, err error) {
	var invalid *numbers.InvalidError
	var conflict *numbers.ConflictError
	var notFound *numbers.NotFoundError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.As(err, &invalid):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "The request has invalid fields.", "errors": invalid.Problems})
	case errors.As(err, &notFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No " + notFound.Kind + " " + notFound.ID + "."})
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusConflict, map[string]string{"message": conflict.Message})
	default:
		h.internalError(w, r, err)
	}
}

func (h *Handler) provisionNumber(w http.ResponseWriter, r *http.Request) {
	var in numbers.Provision
	if !decodeSmall(w, r, &in) {
		return
	}
	n, err := h.numbers.Provision(r.Context(), in)
	h.numberAnswer(w, r, numbers.Show(n), err)
}

func (h *Handler) getNumber(w http.ResponseWriter, r *http.Request) {
	n, err := h.numbers.Number(r.Context(), r.PathValue("number"))
	h.numberAnswer(w, r, numbers.Show(n), err)
}

func (h *Handler) updateNumber(w http.ResponseWriter, r *http.Request) {
	var in numbers.Settings
	if !decodeSmall(w, r, &in) {
		return
	}
	n, err := h.numbers.Update(r.Context(), r.PathValue("number"), in)
	h.numberAnswer(w, r, numbers.Show(n), err)
}

func (h *Handler) portNumber(w http.ResponseWriter, r *http.Request) {
	var in PortRequest
	if !decodeSmall(w, r, &in) {
		return
	}
	n, err := h.numbers.Port(r.Context(), r.PathValue("number"), in.Direction, in.Step, in.ReleaseAt)
	h.numberAnswer(w, r, numbers.Show(n), err)
}

func (h *Handler) releaseNumber(w http.ResponseWriter, r *http.Request) {
	var in ReleaseRequest
	if !decodeSmall(w, r, &in) {
		return
	}
	n, err := h.numbers.Release(r.Context(), r.PathValue("number"), in.ReleaseAt)
	h.numberAnswer(w, r, numbers.Show(n), err)
}

func (h *Handler) setRouting(w http.ResponseWriter, r *http.Request) {
	var in numbers.Routing
	if !decodeSmall(w, r, &in) {
		return
	}
	routing, err := h.numbers.SetRouting(r.Context(), r.PathValue("number"), in)
	h.numberAnswer(w, r, routing, err)
}
