// Package faults holds the fault tests of the whole service (faulttest_test.go): the
// switchboard binary run as real `serve` processes against a real kube-apiserver and etcd
// (test/support/controlplane), a real PostgreSQL (test/support/pgcluster) and a local HTTPS webhook
// receiver, with the processes killed and kube-apiserver frozen. They are black-box (a
// platform report in, a signed webhook out), so they hold for any delivery engine.
// docs/reliability.md describes the scenarios and their figures.
package faults
