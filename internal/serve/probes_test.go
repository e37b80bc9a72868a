package serve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// What each probe path reports for each state of the two dependencies.
func TestProbeHandler(t *testing.T) {
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("unreachable") }
	for _, tc := range []struct {
		name           string
		database, kube func(context.Context) error
		want           map[string]int
	}{
		{"all up", up, up, map[string]int{"/healthz": 200, "/readyz": 200, "/readyz/database": 200, "/dependencyz": 200, "/dependencyz/kube-apiserver": 200}},
		// The APIs still serve everything but the webhook routes: ready.
		{"kube-apiserver down", up, down, map[string]int{"/healthz": 200, "/readyz": 200, "/dependencyz": 500, "/dependencyz/kube-apiserver": 500, "/dependencyz/database": 200}},
		{"database down", down, up, map[string]int{"/healthz": 200, "/readyz": 500, "/readyz/database": 500, "/dependencyz": 500, "/dependencyz/kube-apiserver": 200}},
		{"unknown check", up, up, map[string]int{"/readyz/kube-apiserver": 404, "/dependencyz/nothing": 404}},
	} {
		h := probeHandler(tc.database, tc.kube)
		for path, want := range tc.want {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("%s: GET %s = %d, want %d (%s)", tc.name, path, rec.Code, want, rec.Body)
			}
		}
	}
}

// --pprof adds the profiles beside the probes; without it they are not served.
func TestProbesServeProfilesOnlyWithPprof(t *testing.T) {
	down := func(context.Context) error { return errors.New("unreachable") }
	for _, tc := range []struct {
		name string
		h    http.Handler
		want map[string]int
	}{
		{"default", probeHandler(down, down), map[string]int{"/debug/pprof/": 404, "/debug/pprof/goroutine": 404, "/readyz": 500}},
		{"--pprof", withPprof(probeHandler(down, down)), map[string]int{"/debug/pprof/": 200, "/debug/pprof/goroutine": 200, "/readyz": 500, "/healthz": 200}},
	} {
		for path, want := range tc.want {
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("%s: GET %s = %d, want %d", tc.name, path, rec.Code, want)
			}
		}
	}
}
