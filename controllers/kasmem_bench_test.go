/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/controlplane"
)

// kasMemory prints kube-apiserver's memory at a stage of a benchmark: its resident set now
// and at its peak, and from its Go runtime after a forced collection, the live heap, the
// heap's free spans still held and those returned to the system. With BENCH_KAS_PPROF set to a
// directory it also saves the heap profile there as <stage>.pb.gz (inuse_space is what is
// live at that collection, alloc_space all allocated since start; `go tool pprof
// -sample_index=alloc_space`). It returns the live heap in bytes (0 if it could not be read).
func kasMemory(b *testing.B, cp *controlplane.Env, stage string) float64 {
	b.Helper()
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		b.Error(err)
		return 0
	}
	get := func(path string) []byte {
		resp, err := hc.Get(strings.TrimRight(cp.Config.Host, "/") + path)
		if err != nil {
			b.Error(err)
			return nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Errorf("GET %s: %d %v", path, resp.StatusCode, err)
			return nil
		}
		return body
	}
	// ?gc=1 collects before the profile is written, so the metrics read next are of a heap
	// holding only live objects (and the garbage made since).
	prof := get("/debug/pprof/heap?gc=1")
	if dir := os.Getenv("BENCH_KAS_PPROF"); dir != "" && prof != nil {
		if err := os.WriteFile(filepath.Join(dir, stage+".pb.gz"), prof, 0o644); err != nil {
			b.Error(err)
		}
	}
	metrics := get("/metrics")
	if dir := os.Getenv("BENCH_KAS_PPROF"); dir != "" && metrics != nil {
		if err := os.WriteFile(filepath.Join(dir, stage+".metrics"), metrics, 0o644); err != nil {
			b.Error(err)
		}
	}
	m := promValues(metrics, "go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_next_gc_bytes")
	rss := benchkit.RSS()
	fmt.Printf("  kube-apiserver at %s: RSS %d MiB (peak so far %s); after a collection heap allocated %.0f MiB, in use %.0f MiB, free spans held %.0f MiB, returned %.0f MiB, next GC at %.0f MiB; etcd RSS %d MiB\n",
		stage, rss["kube-apiserver"]>>20, peakOf("kube-apiserver"), m["go_memstats_heap_alloc_bytes"]/(1<<20), m["go_memstats_heap_inuse_bytes"]/(1<<20),
		(m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"])/(1<<20),
		m["go_memstats_heap_released_bytes"]/(1<<20), m["go_memstats_next_gc_bytes"]/(1<<20), rss["etcd"]>>20)
	return m["go_memstats_heap_alloc_bytes"]
}

// peakOf is the peak RSS of the benchmark's process name, as benchkit.PeakRSS prints it.
func peakOf(name string) string {
	for _, p := range strings.Split(benchkit.PeakRSS(), ", ") {
		if v, ok := strings.CutPrefix(p, name+" "); ok {
			return v
		}
	}
	return "?"
}

// promValues reads the unlabelled samples names from a Prometheus text exposition.
func promValues(body []byte, names ...string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, n := range names {
			if v, ok := strings.CutPrefix(line, n+" "); ok {
				out[n], _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return out
}

// kasObjectSize prints the size of the JSON kube-apiserver serves for the object at path (an
// API path) and how much of it is metadata.managedFields.
func kasObjectSize(b *testing.B, cp *controlplane.Env, what, path string) {
	b.Helper()
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		b.Error(err)
		return
	}
	resp, err := hc.Get(strings.TrimRight(cp.Config.Host, "/") + path)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("GET %s: %d %v", path, resp.StatusCode, err)
		return
	}
	var obj struct {
		Metadata struct {
			ManagedFields json.RawMessage `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		b.Error(err)
		return
	}
	fmt.Printf("  %s as JSON: %d bytes, of which managedFields %d\n", what, len(body), len(obj.Metadata.ManagedFields))
}
