/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package benchpeer runs Switchboard's peers on this machine, each built from its source by
// a script in hack/bench, so that their benchmarks can measure them with the harness
// Switchboard's BenchmarkWebhookEndToEnd uses (internal/benchkit): Convoy
// (github.com/frain-dev/convoy, an open-source Go webhooks gateway on PostgreSQL and Redis;
// hack/bench/convoy.sh) and Hookdeck Outpost (github.com/hookdeck/outpost, an open-source Go
// event gateway on PostgreSQL, Redis and RabbitMQ; hack/bench/outpost.sh). Benchmarks only;
// no peer's code enters this repository.
package benchpeer
