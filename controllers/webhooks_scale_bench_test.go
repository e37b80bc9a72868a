/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1alpha1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/internal/store"
	"github.com/switchboard-dev/switchboard/internal/tenancy"
	"github.com/switchboard-dev/switchboard/internal/webhook/send"
	"github.com/switchboard-dev/switchboard/test/support/benchkit"
	"github.com/switchboard-dev/switchboard/test/support/storetest"
)

// BenchmarkWebhookEndpointScale: BENCH_SCALE_ACCOUNTS accounts (default 10,000) with five
// endpoints each, made through the same store and kube-apiserver as the API makes them (a fast
// path: no API rate limits), then a replica's manager started on them with the shipped cache
// and dispatcher. It reports how fast they were made, the manager's time to a synced cache and
// to its first delivery, its heap and the process's RSS growth, etcd's database size, each
// process's peak RSS, kube-apiserver's memory at each stage (kasMemory) and what it holds per
// endpoint, and deliveries to one endpoint of each of 200 random accounts. Run with
// `make bench`; figures in docs/benchmarks.md and docs/capacity.md.
func BenchmarkWebhookEndpointScale(b *testing.B) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("KUBEBUILDER_ASSETS is not set: run via make bench")
	}
	accounts := envInt("BENCH_SCALE_ACCOUNTS", 10000)
	const perAccount = 5
	ctx := context.Background()
	cp, kube, st := startBenchStack(b)
	kasLive0 := kasMemory(b, cp, "start")
	rcv := benchkit.NewReceiver()
	defer rcv.Srv.Close()

	t0 := time.Now()
	made := makeScaleAccounts(b, kube, st, accounts, perAccount, func(int) string { return rcv.Srv.URL })
	made1 := time.Since(t0)
	fmt.Printf("  %d accounts, %d endpoints and their Secrets made in %.1fs (%.0f endpoints/s)\n", accounts, accounts*perAccount,
		made1.Seconds(), float64(accounts*perAccount)/made1.Seconds())
	if kasLive := kasMemory(b, cp, "made"); kasLive0 > 0 && kasLive > 0 {
		// What kube-apiserver holds for an endpoint with its Secret (its watch cache), before
		// its status is written.
		b.ReportMetric((kasLive-kasLive0)/1e3/float64(accounts*perAccount), "kube-apiserver-live-KB/endpoint")
	}

	heap0, rss0 := heapInuse(), selfRSS()
	r := &benchRun{b: b, cp: cp, kube: kube, st: st, rcv: rcv, clk: clock.RealClock{}, endpoints: perAccount}
	start := time.Now()
	r.startManager()
	defer r.stop()
	// The first delivery: one event for the last account made, queued as the manager starts.
	first := made[accounts-1]
	r.tenant.Account.ID = first.id
	r.enqueue(1, 0)
	r.waitFor("the first delivery", 10*time.Minute, func() bool { return rcv.Delivered() >= perAccount })
	firstDelivery := time.Since(start)
	fmt.Printf("  manager started to first delivery: %.1fs\n", firstDelivery.Seconds())
	b.ReportMetric(firstDelivery.Seconds(), "s-to-first-delivery")
	kasMemory(b, cp, "manager-synced")

	// A sample of accounts, one event each, 20 a second.
	sample := rand.Perm(accounts)[:min(200, accounts)]
	created := map[uuid.UUID]time.Time{}
	for _, i := range sample {
		r.tenant.Account.ID = made[i].id
		r.enqueue(1, 0)
		for id, at := range r.created {
			created[id] = at
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.waitFor("the sample's deliveries", 5*time.Minute, func() bool { return rcv.Delivered() >= perAccount*(1+len(sample)) })
	lat, _ := benchkit.Latencies(rcv, created)
	fmt.Printf("  %d deliveries to %d random accounts: event→delivery p50 %v, p99 %v\n", len(lat), len(sample),
		benchkit.Pct(lat, 0.5).Round(time.Millisecond), benchkit.Pct(lat, 0.99).Round(time.Millisecond))
	b.ReportMetric(float64(benchkit.Pct(lat, 0.99).Milliseconds()), "sample-p99-ms")

	heap1, rss1 := heapInuse(), selfRSS()
	fmt.Printf("  manager: heap %+.0f MB (%.1f KB an endpoint), process RSS %+.0f MB\n", float64(heap1-heap0)/1e6,
		float64(heap1-heap0)/1e3/float64(accounts*perAccount), float64(rss1-rss0)/1e6)
	b.ReportMetric(float64(heap1-heap0)/1e3/float64(accounts*perAccount), "heap-KB/endpoint")
	fmt.Printf("  etcd database: %.0f MB\n", etcdDBSize(b, cp.EtcdURL())/1e6)
	kasMemory(b, cp, "end")
	ns := tenancy.Namespace(made[0].publicID)
	kasObjectSize(b, cp, "a WebhookEndpoint", "/apis/switchboard.dev/v1alpha1/namespaces/"+ns+"/webhookendpoints/whep-scale-0")
	kasObjectSize(b, cp, "its signing Secret", "/api/v1/namespaces/"+ns+"/secrets/"+send.SecretName("whep-scale-0"))
	// BENCH_KAS_QUIET: how long to leave kube-apiserver without writes before measuring it
	// again, to tell what it keeps from what it held while busy.
	if d, err := time.ParseDuration(os.Getenv("BENCH_KAS_QUIET")); err == nil && d > 0 {
		time.Sleep(d)
		kasMemory(b, cp, "quiet")
	}
	fmt.Printf("  peak RSS: %s\n", benchkit.PeakRSS())
	var undispatched int
	if err := storetest.SQL(b, st).QueryRow(ctx, `SELECT count(*) FROM events WHERE dispatched_at IS NULL`).Scan(&undispatched); err != nil || undispatched != 0 {
		b.Errorf("%d events left undispatched (%v)", undispatched, err)
	}
}

// scaleAccount is an account made by makeScaleAccounts.
type scaleAccount struct {
	id       int64
	publicID string
}

// makeScaleAccounts makes n accounts through the store, and their namespaces, perAccount
// endpoints each (subscribed to call.ended, endpoint e at baseURL(i)+"/ep/e") and signing
// Secrets through kube-apiserver, 16 accounts at a time: what the API makes, without its
// rate limits.
func makeScaleAccounts(b *testing.B, kube client.Client, st *store.Store, n, perAccount int, baseURL func(i int) string) []scaleAccount {
	ctx := context.Background()
	made := make([]scaleAccount, n)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			acct, err := st.CreateAccount(ctx, store.NewAccount{Name: fmt.Sprintf("Scale %d Ltd", i), Plan: plans.Business})
			if err != nil {
				return err
			}
			made[i] = scaleAccount{id: acct.ID, publicID: acct.PublicID}
			ns := tenancy.Namespace(acct.PublicID)
			if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{switchboardv1alpha1.AccountLabel: acct.PublicID}}}); err != nil {
				return err
			}
			for e := range perAccount {
				name := fmt.Sprintf("whep-scale-%d", e)
				ep := &switchboardv1alpha1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					Labels: map[string]string{switchboardv1alpha1.AccountLabel: acct.PublicID}},
					Spec: switchboardv1alpha1.WebhookEndpointSpec{AccountID: acct.PublicID, DisplayName: "CRM " + name,
						URL: fmt.Sprintf("%s/ep/%d", baseURL(i), e), Events: []switchboardv1alpha1.WebhookEventType{switchboardv1alpha1.EventCallEnded},
						SigningSecretRef: &switchboardv1alpha1.LocalSecretReference{Name: send.SecretName(name)}}}
				if err := kube.Create(ctx, ep); err != nil {
					return err
				}
				if err := kube.Create(ctx, send.NewSigningSecret(ep, send.SecretName(name), send.NewSecret())); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return made
}

// heapInuse is this process's heap in use after a collection.
func heapInuse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// selfRSS is this process's resident set in bytes.
func selfRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// etcdDBSize reads etcd's database size from its metrics.
func etcdDBSize(b *testing.B, etcdURL string) float64 {
	resp, err := http.Get(strings.TrimRight(etcdURL, "/") + "/metrics")
	if err != nil {
		b.Error(err)
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_mvcc_db_total_size_in_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
