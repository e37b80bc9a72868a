// Package pgrestart holds fault tests that run in make test: the service's own parts under load
// while something they depend on fails (a PostgreSQL restart), checking that the API answers
// 503 with Retry-After instead of 500 and that no acknowledged write is lost.
package pgrestart
