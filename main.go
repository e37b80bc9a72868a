/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command switchboard is the one binary of the service: serve, migrate, admin, seed, and the
// integrator tools listen and trigger.
package main

import (
	"os"
	// Account time zones are loaded by name; the image has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/switchboard-dev/switchboard/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
