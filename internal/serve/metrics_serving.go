package serve

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsServerOptions serves /metrics as the kubebuilder v4 scaffold does when secure:
// HTTPS (a self-signed certificate unless one is mounted) and only to callers whose token
// the kube-apiserver authenticates (TokenReview) and authorizes for GET /metrics
// (SubjectAccessReview). Plain HTTP is for a process on a developer's machine.
func metricsServerOptions(o Options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.MetricsSecure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = o.MetricsCertDir
	// HTTP/2 stays off on the metrics port (CVE-2023-44487 and CVE-2023-39325, rapid
	// reset and stream cancellation), as in the scaffold; Prometheus scrapes over HTTP/1.1.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}
