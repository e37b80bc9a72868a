/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package fleetscaling

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through it; the replicas' logs are in files
	os.Exit(m.Run())
}
