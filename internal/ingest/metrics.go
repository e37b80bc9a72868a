package ingest

import (
	"net/http"

	"github.com/switchboard-dev/switchboard/internal/metrics"
)

// reportKinds are the label values of switchboard_ingest_reports_total by route pattern;
// requests to other routes (reads such as GET /platform/v1/numbers) are not reports.
var reportKinds = map[string]string{
	"POST /platform/v1/calls":         "call",
	"POST /platform/v1/texts":         "text",
	"POST /platform/v1/message-slips": "message_slip",
}

// serveCounted serves an authenticated request and counts it when it is a report.
func (h *Handler) serveCounted(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	h.mux.ServeHTTP(sw, r)
	// The mux sets r.Pattern to the route it chose.
	if kind, ok := reportKinds[r.Pattern]; ok {
		metrics.IngestReport(kind, sw.status)
	}
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
