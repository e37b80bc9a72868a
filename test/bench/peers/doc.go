/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package peers runs Switchboard's peers on this machine, each built from its source, so
// that their benchmarks can measure them with the harness
// Switchboard's BenchmarkWebhookEndToEnd uses (test/support/benchkit): Convoy
// (github.com/frain-dev/convoy, an open-source Go webhooks gateway on PostgreSQL and Redis;
// CONVOY_BIN), Hookdeck Outpost (github.com/hookdeck/outpost, an open-source Go event gateway
// on PostgreSQL, Redis and RabbitMQ; OUTPOST_BIN) and Svix's server
// (github.com/svix/svix-webhooks, an open-source Rust webhooks service on PostgreSQL and
// Redis; SVIX_BIN). Each binary is built beforehand, outside this repository: benchmarks
// only; no peer's code, and no recipe that builds it, enters this repository.
package peers
