// Package faults holds the fault tests of the whole service: the switchboard binary run as
// real `serve` processes against a real kube-apiserver and etcd, a real PostgreSQL and a local
// HTTPS webhook receiver, all started by test/support/servetest, with the processes killed
// and kube-apiserver frozen. They are black-box (a platform report in, a signed webhook out),
// so they hold for any delivery engine. docs/reliability.md describes the scenarios and their
// figures.
package faults
