package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-logr/logr"
)

// A GET whose first run loses its database connection runs once more and answers what the
// second run found; a write is never run twice and answers 503 with Retry-After.
func TestRetryUnavailableRead(t *testing.T) {
	s := &Server{cfg: Config{Log: logr.Discard()}}
	lost := fmt.Errorf("list calls: %w", io.ErrUnexpectedEOF)
	for _, c := range []struct {
		method     string
		failures   int // runs that fail with a lost connection before one succeeds
		wantRuns   int
		wantStatus int
	}{
		{"GET", 0, 1, 200},
		{"GET", 1, 2, 200},
		{"GET", 2, 2, 503},
		{"POST", 1, 1, 503},
	} {
		runs := 0
		ws := new(restful.WebService).Path("/t")
		op := func(req *restful.Request, resp *restful.Response) {
			runs++
			if runs <= c.failures {
				s.internalError(req, resp, lost)
				return
			}
			writeJSON(resp, http.StatusOK, map[string]string{"ok": "yes"})
		}
		ws.Route(ws.Method(c.method).Path("/op").To(op).Filter(retryUnavailableRead))
		container := restful.NewContainer()
		container.Add(ws)
		rec := httptest.NewRecorder()
		container.ServeHTTP(rec, httptest.NewRequest(c.method, "/t/op", nil))
		if runs != c.wantRuns || rec.Code != c.wantStatus {
			t.Errorf("%s failing %d times: %d runs, status %d; want %d runs, %d", c.method, c.failures, runs, rec.Code, c.wantRuns, c.wantStatus)
		}
		if rec.Code == 503 && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s failing %d times: 503 without Retry-After", c.method, c.failures)
		}
	}
}
