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
// double, creates N Volumes as fast as the API takes them, and prints the
// creation-to-Ready latency (p50, p99, max; Ready seen by an informer),
// the total time, and how many reconciles the Volume controller needed per
// Volume.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

func main() {
	n := flag.Int("n", 1000, "how many Volumes to create")
	nodes := flag.Int("nodes", 10, "nodes, one failure domain each")
	perNode := flag.Int("osds-per-node", 3, "OSDs per node")
	workers := flag.Int("workers", 8, "Volume controller workers")
	creators := flag.Int("creators", 16, "clients creating Volumes at once")
	size := flag.String("size", "16Mi", "each Volume's size; the 2Gi OSDs hold 1000 x 3 replicas of 16Mi without overcommit")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (the operator and the SPDK doubles run here) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*n, *nodes, *perNode, *workers, *creators, resource.MustParse(*size)); err != nil {
		fmt.Fprintf(os.Stderr, "bench-provision: %v\n", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, nodes, perNode, workers, creators int, size resource.Quantity) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var ns []localcluster.Node
	for i := range nodes {
		ns = append(ns, localcluster.Node{Name: fmt.Sprintf("bench-%02d", i), Zone: fmt.Sprintf("z%02d", i)})
	}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Root: ".", Nodes: ns, Pools: []string{"bench"}, StartSPDK: localnode.DoubleSPDK(spdktest.NewFabric()),
		Operator: controllers.Options{Resync: 30 * time.Second, ReplicaGrace: 5 * time.Minute, TargetGrace: 30 * time.Second, AgentLease: 20 * time.Second, VolumeWorkers: workers},
	})
	if c != nil {
		defer func() { _ = c.Stop() }()
	}
	if err != nil {
		return err
	}
	osds := nodes * perNode
	fmt.Printf("bench-provision: %d Volumes of %s (3 replicas each) over %d OSDs on %d nodes; %d controller workers, %d creators\n", n, size.String(), osds, nodes, workers, creators)
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: flintv1.PoolSpec{Replicas: 3, Devices: flintv1.PoolDevices{
			Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("2Gi")}, MaxPerNode: ptr.To(int32(perNode)),
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

	// An informer sees each Volume turn Ready as it happens.
	informers, err := cache.New(c.Env.Config, cache.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		return err
	}
	inf, err := informers.GetInformer(ctx, &flintv1.Volume{})
	if err != nil {
		return err
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
		return err
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return fmt.Errorf("the Volume informer did not sync")
	}
	before := reconciles()
	var mu sync.Mutex
	created := map[string]time.Time{}
	start := time.Now()
	names := make(chan string)
	errs := make(chan error, creators)
	for range creators {
		go func() {
			for name := range names {
				v := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flintv1.VolumeSpec{Pool: "bench", Size: size}}
				t := time.Now()
				if err := c.Client.Create(ctx, v); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				created[name] = t
				mu.Unlock()
			}
			errs <- nil
		}()
	}
	go func() {
		for i := range n {
			names <- fmt.Sprintf("pvc-bench-%05d", i)
		}
		close(names)
	}()

	var latencies []time.Duration
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	for len(latencies) < n {
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
			return fmt.Errorf("%d of %d Volumes Ready when time ran out", len(latencies), n)
		}
	}
	total := time.Since(start)
	for range creators {
		if err := <-errs; err != nil {
			return err
		}
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
	fmt.Printf("created and Ready: %d Volumes in %s (%.1f Volumes/s)\n", n, total.Round(time.Millisecond), float64(n)/total.Seconds())
	fmt.Printf("create-to-Ready latency: p50 %s, p99 %s, max %s\n", pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
	fmt.Printf("Volume controller reconciles: %.0f, %.1f per Volume\n", reconciles()-before, (reconciles()-before)/float64(n))
	return nil
}

// reconciles reads controller-runtime's reconcile count of the Volume
// controller, every result.
func reconciles() float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "volume" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
