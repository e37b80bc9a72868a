/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package fleetscaling measures how webhook delivery scales with replicas: 1, 2, 3 `switchboard
// serve` processes, each held to the same CPU budget by a cgroup, against one kube-apiserver,
// etcd and PostgreSQL (docs/benchmarks.md, "Scaling across replicas"). Benchmarks only.
package fleetscaling
