/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package benchkit holds what the webhook delivery benchmarks share, so that Switchboard's
// benchmarks (controllers) and the peer comparisons (test/bench/peers: Convoy, Outpost) measure the same
// way: the local TLS receiver, the burst/paced load generator, event→delivery latency and
// the CPU time of every process from /proc. Benchmarks only; nothing in the product imports it.
package benchkit
