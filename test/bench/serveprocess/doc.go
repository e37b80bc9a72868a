// Package serveprocess measures webhook delivery to one endpoint the hard way: the service
// deployed from its parts (the built `switchboard serve` binary as its own process, a real
// kube-apiserver and etcd, PostgreSQL; test/support/servetest) with the shipped defaults, the
// telephony platform reporting answered calls through POST /platform/v1/calls from a fixed
// number of concurrent reporters or on a fixed schedule, and a Go net/http HTTPS receiver
// speaking HTTP/2 that verifies every signature and answers 200 at once. Benchmarks only
// (`make bench`); docs/benchmarks.md has the figures and the knobs.
package serveprocess
