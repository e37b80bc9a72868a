/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// apiserverProfile writes a CPU profile of kube-apiserver (its /debug/pprof, as cluster
// admin) of d to path, in the background.
func apiserverProfile(cfg *rest.Config, path string, d time.Duration) {
	go func() {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
			fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), int(d.Seconds())), nil)
		res, err := hc.Do(req)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			fmt.Println("apiserver profile:", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, res.Body)
	}()
}

// apiRequests counts kube-apiserver requests on webhook resources by verb (and
// subresource), from its apiserver_request_total metric.
func apiRequests(cfg *rest.Config) map[string]float64 {
	out := map[string]float64{}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return out
	}
	res, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	label := func(line, name string) string {
		i := strings.Index(line, name+`="`)
		if i < 0 {
			return ""
		}
		rest := line[i+len(name)+2:]
		return rest[:strings.IndexByte(rest, '"')]
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		res := label(line, "resource")
		if res != "webhookdeliveries" && res != "webhookendpoints" {
			continue
		}
		key := res + " " + label(line, "verb")
		if sub := label(line, "subresource"); sub != "" {
			key += "/" + sub
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out
}

// requestsSince formats the requests made since before, per delivery.
func requestsSince(cfg *rest.Config, before map[string]float64, deliveries int) string {
	after := apiRequests(cfg)
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{}
	for _, k := range keys {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f (%.2f/delivery)", k, d, d/float64(deliveries)))
		}
	}
	return strings.Join(parts, ", ")
}
