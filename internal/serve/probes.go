package serve

import (
	"context"
	"net/http"
	"net/http/pprof"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// probeTimeout bounds one dependency check, under a kubelet probe's default 1 s timeout.
const probeTimeout = 900 * time.Millisecond

// probeHandler serves the health endpoints of a replica:
//   - /healthz: the process is alive (liveness; never depends on another service, so an
//     outage elsewhere does not restart every replica).
//   - /readyz: the replica can serve the public and platform APIs, i.e. PostgreSQL answers.
//     kube-apiserver is deliberately not part of it: during its outage the replica still
//     serves every route but the webhook ones (those answer 503), and failing readiness
//     would take all replicas out of the Service at once.
//   - /dependencyz: every dependency, kube-apiserver included; /dependencyz/kube-apiserver
//     and /dependencyz/database check one (for dashboards and operators).
//
// Each path takes /<check> and ?verbose like controller-runtime's probes.
func probeHandler(database, kube func(context.Context) error) http.Handler {
	check := func(f func(context.Context) error) healthz.Checker {
		return func(r *http.Request) error {
			ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
			defer cancel()
			return f(ctx)
		}
	}
	mux := http.NewServeMux()
	mount := func(path string, checks map[string]healthz.Checker) {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	mount("/healthz", map[string]healthz.Checker{"ping": healthz.Ping})
	mount("/readyz", map[string]healthz.Checker{"database": check(database)})
	mount("/dependencyz", map[string]healthz.Checker{"database": check(database), "kube-apiserver": check(kube)})
	return mux
}

// withPprof adds Go's profiles (/debug/pprof/) to the probes' handler (--pprof): off by
// default, since they show the process's internals and a profile costs CPU while it runs.
func withPprof(probes http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", probes)
	return mux
}
