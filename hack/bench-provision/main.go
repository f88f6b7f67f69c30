/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command bench-provision measures provisioning against the real
// kube-apiserver: it starts a local cluster (test/localcluster) with a
// Pool of OSDs on several nodes, each a real osd-agent over the SPDK
// double, creates Volumes, and prints the creation-to-Ready latency (p50,
// p99, max; Ready seen by an informer), the total time, and how many
// reconciles and API writes the Volume controller needed per Volume.
//
// Two arrival patterns: a burst (-n Volumes, as fast as the API takes
// them) and a steady stream (-rate Volumes per second for -duration).
// Either way it ends by checking what provisioning must never give up for
// speed: every Volume has its replicas on distinct OSDs in distinct
// failure domains, and no OSD holds more than its capacity.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

// config is one benchmark run.
type config struct {
	n                 int
	rate              float64 // Volumes per second; 0 is a burst
	nodes, perNode    int
	workers, creators int
	size, osdSize     resource.Quantity
	// snapshots takes a Snapshot of that many Volumes (-1: every one)
	// once all are Ready.
	snapshots int
	// rest, when set, runs the operator as a process and measures what
	// the control plane costs for that long with nothing changing, then
	// how long a restarted operator takes to observe everything again.
	rest time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 1000, "how many Volumes to create in a burst (ignored with -rate)")
	flag.Float64Var(&c.rate, "rate", 0, "create Volumes at this steady rate per second instead of a burst")
	duration := flag.Duration("duration", 2*time.Minute, "how long to create Volumes at -rate")
	flag.IntVar(&c.nodes, "nodes", 10, "nodes, one failure domain each")
	flag.IntVar(&c.perNode, "osds-per-node", 3, "OSDs per node")
	flag.IntVar(&c.workers, "workers", 16, "Volume controller workers (the operator's --volume-workers default)")
	flag.IntVar(&c.creators, "creators", 16, "clients creating Volumes at once")
	size := flag.String("size", "16Mi", "each Volume's size; the 2Gi OSDs hold 1000 x 3 replicas of 16Mi without overcommit")
	osdSize := flag.String("osd-size", "2Gi", "each OSD's (malloc) device in the SPDK double, which holds no data")
	flag.IntVar(&c.snapshots, "snapshots", 0, "take a Snapshot of this many Volumes (-1: every one) once all are Ready; the operator cuts those of different Volumes at once (--snapshot-workers), about 3.5 a second at 10,000 Volumes here")
	flag.DurationVar(&c.rest, "rest", 0, "then measure the control plane at rest for this long, the operator running as a process, and time its restart")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (the operator and the SPDK doubles run here) to this file")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this loopback address (127.0.0.1:6060) to profile a phase of the run")
	flag.Parse()
	c.size, c.osdSize = resource.MustParse(*size), resource.MustParse(*osdSize)
	if c.rate > 0 {
		c.n = int(c.rate * duration.Seconds())
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if *pprofAddr != "" {
		go func() { fmt.Fprintln(os.Stderr, http.ListenAndServe(*pprofAddr, nil)) }()
	}
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "bench-provision: %v\n", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(cfg config) error {
	// Interrupted, the run ends through its cleanups: the apiserver, etcd,
	// agents and operator it started go with it. 10,000 Volumes and as
	// many Snapshots take about 75 minutes here.
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(interrupted, 3*time.Hour)
	defer cancel()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var ns []localcluster.Node
	for i := range cfg.nodes {
		ns = append(ns, localcluster.Node{Name: fmt.Sprintf("bench-%02d", i), Zone: fmt.Sprintf("z%02d", i)})
	}
	fabric := spdktest.NewFabric()
	opts := localcluster.Options{
		Root: ".", Nodes: ns, Pools: []string{"bench"}, StartSPDK: localnode.DoubleSPDK(fabric),
		// As osd-agent's default: the local runner's 200ms would have 30
		// agents probe the one SPDK double 150 times a second.
		ProbeInterval: 2 * time.Second,
		Operator:      controllers.Options{Resync: 30 * time.Second, ReplicaGrace: 5 * time.Minute, TargetGrace: 30 * time.Second, AgentLease: 20 * time.Second, VolumeWorkers: cfg.workers},
	}
	if cfg.rest > 0 {
		opts.OperatorProcesses, opts.OperatorArgs = 1, []string{"--metrics-bind-address=" + operatorMetrics}
	}
	c, err := localcluster.Start(ctx, opts)
	if c != nil {
		defer func() { _ = c.Stop() }()
	}
	if err != nil {
		return err
	}
	gather := crmetrics.Registry.Gather
	var s *scraper
	if cfg.rest > 0 {
		if s, err = newScraper(ctx, c, fabric); err != nil {
			return err
		}
		gather = func() ([]*dto.MetricFamily, error) {
			return s.scrape(ctx, s.operator, "https://"+operatorMetrics+"/metrics", s.token)
		}
	}
	osds := cfg.nodes * cfg.perNode
	arrival := "a burst"
	if cfg.rate > 0 {
		arrival = fmt.Sprintf("%g per second", cfg.rate)
	}
	fmt.Printf("bench-provision: %d Volumes of %s (3 replicas each), created in %s, over %d OSDs on %d nodes; %d controller workers, %d creators\n",
		cfg.n, cfg.size.String(), arrival, osds, cfg.nodes, cfg.workers, cfg.creators)
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: flintv1.PoolSpec{Replicas: 3, Devices: flintv1.PoolDevices{
			Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: cfg.osdSize}, MaxPerNode: ptr.To(int32(cfg.perNode)),
		}},
	}
	if err := c.Client.Create(ctx, pool); err != nil {
		return err
	}
	fmt.Println("waiting for every OSD to be Ready")
	if err := waitFor(ctx, "every OSD Ready", func() (bool, error) {
		var l flintv1.OSDList
		if err := c.Client.List(ctx, &l); err != nil {
			return false, err
		}
		ready := 0
		for _, o := range l.Items {
			if o.Status.Phase == flintv1.OSDPhaseReady {
				ready++
			}
		}
		return ready == osds, nil
	}); err != nil {
		return err
	}

	readyNow, err := watchReady(ctx, c, cfg.n)
	if err != nil {
		return err
	}
	if cfg.rest > 0 {
		// The operator's process serves its metrics once it leads.
		if err := waitFor(ctx, "the operator's metrics", func() (bool, error) { _, err := gather(); return err == nil, nil }); err != nil {
			return err
		}
	}
	before, err := volumeCounters(gather)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	created := map[string]time.Time{}
	start := time.Now()
	names := make(chan string)
	errs := make(chan error, cfg.creators)
	for range cfg.creators {
		go func() {
			for name := range names {
				// As the CSI controller creates it.
				v := &flintv1.Volume{
					ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{flintv1.VolumeFinalizer}},
					Spec:       flintv1.VolumeSpec{Pool: "bench", Size: cfg.size},
				}
				// Recorded before the create: the informer may see the
				// Volume Ready before Create returns.
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
				if err := c.Client.Create(ctx, v); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go arrive(ctx, cfg, start, names)

	var latencies []time.Duration
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for len(latencies) < cfg.n {
		select {
		case <-progress.C:
			mu.Lock()
			fmt.Printf("  %s: %d created, %d Ready\n", time.Since(start).Round(time.Second), len(created), len(latencies))
			mu.Unlock()
		case name := <-readyNow:
			mu.Lock()
			latencies = append(latencies, time.Since(created[name]))
			mu.Unlock()
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Volumes Ready when the run ended: %w", len(latencies), cfg.n, context.Cause(ctx))
		}
	}
	total := time.Since(start)
	for range cfg.creators {
		if err := <-errs; err != nil {
			return err
		}
	}
	after, err := volumeCounters(gather)
	if err != nil {
		return err
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
	fmt.Printf("created and Ready: %d Volumes in %s (%.1f Volumes/s)\n", cfg.n, total.Round(time.Millisecond), float64(cfg.n)/total.Seconds())
	fmt.Printf("create-to-Ready latency: p50 %s, p99 %s, max %s\n", pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
	per := func(k string) float64 { return (after[k] - before[k]) / float64(cfg.n) }
	fmt.Printf("per Volume: %.1f Volume reconciles, %.1f API writes by the operator, %.1f agent calls (%s)\n", per("reconciles"), per("writes"), per("agent"), agentCalls(per, after))
	fmt.Printf("a reconcile takes %.0f ms on average; requests waited %.1f s in all for the client's rate limiter\n",
		1000*(after["reconcile seconds"]-before["reconcile seconds"])/(after["reconciles"]-before["reconciles"]), after["throttled seconds"]-before["throttled seconds"])
	if err := checkPlacement(ctx, c); err != nil {
		return err
	}
	fmt.Println("placement: every Volume on 3 OSDs in distinct failure domains, no OSD over its capacity")
	snapshots := cfg.snapshots
	if snapshots < 0 || snapshots > cfg.n {
		snapshots = cfg.n
	}
	if snapshots > 0 {
		names := make([]string, snapshots)
		for i := range names {
			names[i] = volumeName(i)
		}
		if err := snapshotAll(ctx, c, names); err != nil {
			return err
		}
	}
	if cfg.rest == 0 {
		return nil
	}
	if err := atRest(ctx, s, cfg.rest, opts.Operator.AgentLease, osds); err != nil {
		return err
	}
	if err := repairDrift(ctx, c, volumeName(0)); err != nil {
		return err
	}
	return restart(ctx, s, cfg.n, snapshots)
}

// volumeName is the name of the i-th Volume created.
func volumeName(i int) string { return fmt.Sprintf("pvc-bench-%05d", i) }

// arrive hands out the Volumes' names: all at once, or one every 1/rate
// seconds from start.
func arrive(ctx context.Context, cfg config, start time.Time, names chan<- string) {
	defer close(names)
	for i := range cfg.n {
		if cfg.rate > 0 {
			at := start.Add(time.Duration(float64(i) / cfg.rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
		}
		select {
		case <-ctx.Done():
			return
		case names <- volumeName(i):
		}
	}
}

// watchReady tells, through the channel it returns, each Volume's name
// the moment an informer first sees it Ready.
func watchReady(ctx context.Context, c *localcluster.Cluster, n int) (<-chan string, error) {
	informers, err := cache.New(c.Env.Config, cache.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	inf, err := informers.GetInformer(ctx, &flintv1.Volume{})
	if err != nil {
		return nil, err
	}
	readyNow := make(chan string, n)
	seen := map[string]bool{}
	var seenMu sync.Mutex
	onChange := func(obj any) {
		v, ok := obj.(*flintv1.Volume)
		if !ok || v.Status.Phase != flintv1.VolumePhaseReady {
			return
		}
		seenMu.Lock()
		defer seenMu.Unlock()
		if !seen[v.Name] {
			seen[v.Name] = true
			readyNow <- v.Name
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: onChange, UpdateFunc: func(_, obj any) { onChange(obj) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the Volume informer did not sync")
	}
	return readyNow, nil
}

// checkPlacement fails unless every Volume's replicas are on distinct OSDs
// in distinct failure domains and every OSD's replicas fit its capacity.
func checkPlacement(ctx context.Context, c *localcluster.Cluster) error {
	var vols flintv1.VolumeList
	var osds flintv1.OSDList
	var nodes corev1.NodeList
	for _, l := range []client.ObjectList{&vols, &osds, &nodes} {
		if err := c.Client.List(ctx, l); err != nil {
			return err
		}
	}
	// The bench Pool's failure domain is the node (the Pool's default).
	domain := map[string]string{}
	for _, n := range nodes.Items {
		domain[n.Name] = n.Labels[corev1.LabelHostname]
	}
	osdDomain, capacity := map[string]string{}, map[string]int64{}
	for _, o := range osds.Items {
		osdDomain[o.Name] = domain[o.Spec.NodeName]
		if o.Status.Capacity != nil {
			capacity[o.Name] = o.Status.Capacity.Total.Value()
		}
	}
	committed := map[string]int64{}
	for _, v := range vols.Items {
		domains := map[string]bool{}
		for _, rep := range v.Status.Replicas {
			d := osdDomain[rep.OSD]
			if d == "" || domains[d] {
				return fmt.Errorf("placement: Volume %s has replicas sharing failure domain %q (or on an unknown OSD): %v", v.Name, d, v.Status.Replicas)
			}
			domains[d] = true
			committed[rep.OSD] += v.Spec.Size.Value()
		}
		if len(domains) != 3 {
			return fmt.Errorf("placement: Volume %s has %d replicas, want 3", v.Name, len(domains))
		}
	}
	for o, b := range committed {
		if b > capacity[o] {
			return fmt.Errorf("placement: OSD %s holds %d bytes of replicas, over its capacity of %d", o, b, capacity[o])
		}
	}
	return nil
}

// volumeCounters reads, from the operator's controller-runtime and
// client-go metrics, its counters.
func volumeCounters(gather func() ([]*dto.MetricFamily, error)) (map[string]float64, error) {
	families, err := gather()
	if err != nil {
		return nil, fmt.Errorf("the operator's metrics: %w", err)
	}
	return counters(families), nil
}

// counters are the Volume controller's reconciles, the operator's API
// writes, and the agent calls made, by method.
func counters(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := labelsOf(m)
			switch {
			case f.GetName() == "controller_runtime_reconcile_total" && labels["controller"] == "volume":
				out["reconciles"] += m.GetCounter().GetValue()
			case f.GetName() == "rest_client_requests_total" && labels["method"] != "GET":
				out["writes"] += m.GetCounter().GetValue()
			case f.GetName() == "flint_agent_requests_total":
				out["agent"] += m.GetCounter().GetValue()
				out["agent "+labels["method"]] += m.GetCounter().GetValue()
			case f.GetName() == "flint_agent_request_duration_seconds":
				out["seconds "+labels["method"]] += m.GetHistogram().GetSampleSum()
			case f.GetName() == "rest_client_rate_limiter_duration_seconds":
				out["throttled seconds"] += m.GetHistogram().GetSampleSum()
			case f.GetName() == "controller_runtime_reconcile_time_seconds" && labels["controller"] == "volume":
				out["reconcile seconds"] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// agentCalls lists the agent calls per Volume by method, most first.
func agentCalls(per func(string) float64, counters map[string]float64) string {
	var methods []string
	for k := range counters {
		if m, ok := strings.CutPrefix(k, "agent "); ok && per(k) >= 0.05 {
			methods = append(methods, m)
		}
	}
	slices.SortFunc(methods, func(a, b string) int { return cmp.Compare(per("agent "+b), per("agent "+a)) })
	parts := make([]string, 0, len(methods))
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %.1f (%.0f ms each)", m, per("agent "+m), 1000*per("seconds "+m)/per("agent "+m)))
	}
	return strings.Join(parts, ", ")
}

func waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	return waitEvery(ctx, what, 200*time.Millisecond, done)
}

// waitEvery is waitFor asking every interval.
func waitEvery(ctx context.Context, what string, interval time.Duration, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s", what)
		case <-time.After(interval):
		}
	}
}
