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

// Command bench-datapath measures Flint's data path beside raw SPDK on
// this machine, with SPDK's own initiator (spdk_nvme_perf over NVMe/TCP):
// Volumes of one, two and three replicas, each built by the real operator
// and agents over OSDs launched as their pods say (flint-N), each followed
// by the same SPDK objects assembled by hand on the same cores (raw-N).
// For every Flint workload it also reads the target's latency histogram
// from the agent's /metrics and sets it beside what the initiator
// measured. Needs FLINT_SPDK_DIR and root.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/internal/bench"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

// hostNQN is the initiator's.
const hostNQN = "nqn.2014-08.org.nvmexpress:uuid:5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

// result is one workload's figures on one configuration.
type result struct {
	// Round counts the runs of every configuration, from 1.
	Round  int    `json:"round"`
	Config string `json:"config"`
	// Client is the initiator: spdk_nvme_perf, or the kernel's NVMe/TCP
	// host in the VM lab's guest (fio).
	Client   string  `json:"client"`
	Workload string  `json:"workload"`
	IOPS     float64 `json:"iops"`
	MiBps    float64 `json:"mibps"`
	AvgUs    float64 `json:"avgUs"`
	P50Us    float64 `json:"p50Us"`
	P99Us    float64 `json:"p99Us"`
	P999Us   float64 `json:"p999Us"`
	// Target is what the Volume's target counted of the workload, from
	// its agent's flint_volume_io_latency_seconds; unset for raw.
	Target *targetLatency `json:"target,omitempty"`
}

// endpoint is where the initiator connects.
type endpoint struct{ addr, port, nqn string }

func main() {
	runtime := flag.Duration("runtime", 10*time.Second, "how long each workload runs")
	out := flag.String("out", "bench-datapath.json", "where the figures are written as JSON")
	replicas := flag.String("replicas", "1,2,3", "the Flint configurations: replica counts, in order")
	kernel := flag.Bool("kernel", true, "also measure each configuration through the kernel's NVMe/TCP host in a VM lab guest (TCG: the figures are the emulation's)")
	kernelRuntime := flag.Duration("kernel-runtime", 10*time.Second, "how long each workload runs through the kernel host")
	rounds := flag.Int("rounds", 1, "how many times each flint-N and raw-N pair runs, interleaved; the table gives each figure's median and the IOPS spread")
	qos := flag.Int64("qos", 0, "instead of the comparison, limit each Flint configuration's Volume to this many IOPS (spec.qos) and check that 4k random writes at QD32 run within 5% of it")
	flag.Parse()
	spdkDir := os.Getenv("FLINT_SPDK_DIR")
	if spdkDir == "" {
		fmt.Fprintln(os.Stderr, "bench-datapath: set FLINT_SPDK_DIR to an SPDK build tree (build/bin/nvmf_tgt, build/bin/spdk_nvme_perf)")
		os.Exit(2)
	}
	var counts []int
	for _, f := range strings.Split(*replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > len(benchNodes) {
			fmt.Fprintf(os.Stderr, "bench-datapath: -replicas %q: want counts from 1 to %d\n", *replicas, len(benchNodes))
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if *rounds < 1 {
		fmt.Fprintf(os.Stderr, "bench-datapath: -rounds %d: want at least 1\n", *rounds)
		os.Exit(2)
	}
	if *qos < 0 || *qos%1000 != 0 {
		fmt.Fprintf(os.Stderr, "bench-datapath: -qos %d: want a multiple of 1000 (SPDK limits I/Os in steps of 1000)\n", *qos)
		os.Exit(2)
	}
	if err := run(spdkDir, *runtime, *out, counts, *rounds, *qos, newKernelClient(*kernel, *kernelRuntime)); err != nil {
		fmt.Fprintf(os.Stderr, "bench-datapath: %v\n", err)
		os.Exit(1)
	}
}

// benchNodes are the local cluster's nodes, one failure domain each; a
// Volume of n replicas gets a Pool over the first n.
var benchNodes = []localcluster.Node{{Name: "bench-0", Zone: "a"}, {Name: "bench-1", Zone: "b"}, {Name: "bench-2", Zone: "c"}}

// initiatorCore is where the initiator (spdk_nvme_perf, or the kernel
// host's guest) runs: never on the target's core, on a core without an
// OSD where there is one, else on the one with the fewest OSDs. A core
// shared by two pollers serves each only in the scheduler's time slices
// (4 ms at HZ=250), so the target is kept alone where the cores allow.
func initiatorCore(targetCore int, osdCores []int) int {
	n := goruntime.NumCPU()
	if n == 1 {
		return 0
	}
	load := make([]int, n)
	for _, c := range osdCores {
		load[c%n]++
	}
	best := -1
	for c := range n {
		if c != targetCore && (best < 0 || load[c] < load[best]) {
			best = c
		}
	}
	return best
}

// What every configuration is made of: each OSD a malloc device of
// poolDeviceBytes in osdMemoryMiB of ordinary memory, the Volume a thin
// lvol of volumeBytes on each.
const (
	poolDeviceBytes = 1 << 30
	osdMemoryMiB    = 3072
	volumeBytes     = 256 << 20
)

func run(spdkDir string, runtime time.Duration, out string, replicas []int, rounds int, qos int64, kernel *kernelClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds*len(replicas))*30*time.Minute)
	defer cancel()
	perf := filepath.Join(spdkDir, "build", "bin", "spdk_nvme_perf")
	if _, err := os.Stat(perf); err != nil {
		return fmt.Errorf("no spdk_nvme_perf in %s: %w", spdkDir, err)
	}
	fmt.Printf("bench-datapath: %d cores; NVMe/TCP over loopback; %s per workload (%s through the kernel host)\n", goruntime.NumCPU(), runtime, kernel.runtimeString())

	// The control plane runs through every measurement, so that each sees
	// the same machine; each configuration's OSDs start after the one
	// before stopped.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	c, err := localcluster.Start(ctx, localcluster.Options{
		Root: ".", Nodes: benchNodes, Pools: poolNames(replicas),
		StartSPDK: localnode.RealSPDK(spdkDir),
		Operator:  controllers.Options{Resync: 30 * time.Second, ReplicaGrace: 5 * time.Minute, TargetGrace: 30 * time.Second, AgentLease: 20 * time.Second, VolumeWorkers: 1},
	})
	if c != nil {
		defer func() { _ = c.Stop() }()
	}
	if err != nil {
		return err
	}
	if err := labelNodes(ctx, c); err != nil {
		return err
	}
	if qos > 0 {
		for _, n := range replicas {
			if err := measureQoS(ctx, c, perf, runtime, n, qos); err != nil {
				return fmt.Errorf("QoS of a %d-replica Flint Volume: %w", n, err)
			}
		}
		return nil
	}
	// Each pair runs back to back, on the same cores, so that both see
	// the machine as it is then; rounds show how far that moves.
	var results []result
	for round := 1; round <= rounds; round++ {
		if rounds > 1 {
			fmt.Printf("round %d of %d\n", round, rounds)
		}
		for _, n := range replicas {
			flint, place, err := measureFlint(ctx, c, perf, runtime, n, kernel)
			if err != nil {
				return fmt.Errorf("a %d-replica Flint Volume: %w", n, err)
			}
			raw, err := measureRaw(ctx, spdkDir, perf, runtime, place, kernel)
			if err != nil {
				return fmt.Errorf("raw SPDK of %d replicas: %w", n, err)
			}
			for _, r := range append(flint, raw...) {
				r.Round = round
				results = append(results, r)
			}
		}
	}

	printTable(os.Stdout, results)
	printTargetLatency(os.Stdout, results)
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

func poolName(replicas int) string { return fmt.Sprintf("bench-%d", replicas) }

func poolNames(replicas []int) []string {
	var out []string
	for _, n := range replicas {
		out = append(out, poolName(n))
	}
	return out
}

// poolLabel marks the nodes of the Pool of Volumes of n replicas.
func poolLabel(n int) string { return fmt.Sprintf("bench.flint.io/pool-%d", n) }

// labelNodes puts the first n nodes in the Pool of n replicas.
func labelNodes(ctx context.Context, c *localcluster.Cluster) error {
	for i, bn := range benchNodes {
		var node corev1.Node
		if err := c.Client.Get(ctx, client.ObjectKey{Name: bn.Name}, &node); err != nil {
			return err
		}
		patch := client.MergeFrom(node.DeepCopy())
		for n := i + 1; n <= len(benchNodes); n++ {
			node.Labels[poolLabel(n)] = "true"
		}
		if err := c.Client.Patch(ctx, &node, patch); err != nil {
			return err
		}
	}
	return nil
}

// measureFlint measures a Volume of n replicas in a Pool of polling OSDs
// of one core each, one OSD on each of the first n nodes, then deletes
// both so that the next configuration's OSDs poll alone.
func measureFlint(ctx context.Context, c *localcluster.Cluster, perf string, runtime time.Duration, n int, kernel *kernelClient) ([]result, placement, error) {
	config := fmt.Sprintf("flint-%d", n)
	pool, vol, ep, place, err := startFlint(ctx, c, config, n)
	if err != nil {
		return nil, placement{}, err
	}
	latency, err := newLatencyReader(ctx, c, vol)
	if err != nil {
		return nil, placement{}, err
	}
	results, err := measure(ctx, perf, config, ep, runtime, place.initiator, latency)
	if err != nil {
		return nil, placement{}, err
	}
	if results, err = kernel.measure(ctx, config, ep, place.initiator, results); err != nil {
		return nil, placement{}, err
	}
	return results, place, deleteAndWait(ctx, c, vol, pool)
}

// startFlint creates the Pool and the Volume of n replicas of config and
// waits until the Volume is Ready; it says where its pollers run.
func startFlint(ctx context.Context, c *localcluster.Cluster, config string, n int) (*flintv1.Pool, *flintv1.Volume, endpoint, placement, error) {
	name := poolName(n)
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flintv1.PoolSpec{Replicas: int32(n), NodeSelector: map[string]string{poolLabel(n): "true"}, Devices: flintv1.PoolDevices{
			Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: *resource.NewQuantity(poolDeviceBytes, resource.BinarySI)},
		}, OSD: flintv1.OSDTemplate{OSDResources: flintv1.OSDResources{CPUs: 1, Memory: resource.NewQuantity(osdMemoryMiB<<20, resource.BinarySI)}}},
	}
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       flintv1.VolumeSpec{Pool: name, Size: *resource.NewQuantity(volumeBytes, resource.BinarySI), Replicas: ptr.To(int32(n)), PublishedHosts: []string{hostNQN}},
	}
	for _, obj := range []client.Object{pool, vol} {
		if err := c.Client.Create(ctx, obj); err != nil {
			return nil, nil, endpoint{}, placement{}, err
		}
	}
	ep, err := waitReady(ctx, c, vol)
	if err != nil {
		return nil, nil, endpoint{}, placement{}, err
	}
	place, err := placeInitiator(ctx, c, config, vol)
	return pool, vol, ep, place, err
}

// waitReady waits for vol to be Ready with all its replicas and returns
// where its target serves.
func waitReady(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume) (endpoint, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
			return endpoint{}, err
		}
		online := 0
		for _, r := range vol.Status.Replicas {
			if r.State == flintv1.ReplicaStateOnline {
				online++
			}
		}
		if t := vol.Status.Target; vol.Status.Phase == flintv1.VolumePhaseReady && t != nil && len(t.Endpoints) > 0 && online == int(*vol.Spec.Replicas) {
			return endpoint{addr: t.Endpoints[0].Address, port: strconv.Itoa(int(t.Endpoints[0].Port)), nqn: t.NQN}, nil
		}
		if time.Now().After(deadline) {
			return endpoint{}, fmt.Errorf("the Volume %s is not Ready with %d replicas online after 3 minutes: %s, replicas %+v, conditions %+v", vol.Name, *vol.Spec.Replicas, vol.Status.Phase, vol.Status.Replicas, vol.Status.Conditions)
		}
		time.Sleep(time.Second)
	}
}

// placement is where a configuration's pollers and initiators run.
type placement struct {
	// cores are the cores of the replicas' OSDs, the target's first.
	cores []int
	// initiator is the initiators' core.
	initiator int
}

// placeInitiator prints where each replica's OSD polls and which is the
// target, and returns that with the core the initiators run on.
func placeInitiator(ctx context.Context, c *localcluster.Cluster, config string, vol *flintv1.Volume) (placement, error) {
	var parts []string
	var place placement
	for _, r := range vol.Status.Replicas {
		var o flintv1.OSD
		if err := c.Client.Get(ctx, client.ObjectKey{Name: r.OSD}, &o); err != nil {
			return placement{}, err
		}
		cpus := c.Nodes.CPUs(agentclient.PodName(&o))
		core, err := strconv.Atoi(cpus)
		if err != nil {
			return placement{}, fmt.Errorf("OSD %s runs on cores %q, want one", r.OSD, cpus)
		}
		role := "replica"
		if r.OSD == vol.Status.Target.OSD {
			role = "target+replica"
			place.cores = append([]int{core}, place.cores...)
		} else {
			place.cores = append(place.cores, core)
		}
		mode := "polling"
		if o.Spec.SPDK.InterruptMode {
			mode = "interrupt mode"
		}
		parts = append(parts, fmt.Sprintf("%s (%s, %s, core %d)", r.OSD, role, mode, core))
	}
	place.initiator = initiatorCore(place.cores[0], place.cores)
	note := ""
	if pollers := len(place.cores) + 1; pollers > goruntime.NumCPU() {
		note = fmt.Sprintf("; oversubscribed: %d pollers on %d cores", pollers, goruntime.NumCPU())
	}
	fmt.Printf("  %s: %s; initiators on core %d%s\n", config, strings.Join(parts, "; "), place.initiator, note)
	return place, nil
}

// deleteAndWait unpublishes and deletes vol, then deletes pool, and
// waits until both are gone. Then it deletes pool's OSDs and their pods,
// as the garbage collector would (the local cluster runs none), and waits
// until they are gone too: the local runner stops a pod's processes
// before it lets the pod go, and the next configuration's pollers must
// poll alone. A published Volume is not deleted.
func deleteAndWait(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume, pool *flintv1.Pool) error {
	patch := client.MergeFrom(vol.DeepCopy())
	vol.Spec.PublishedHosts = nil
	if err := c.Client.Patch(ctx, vol, patch); err != nil {
		return err
	}
	if err := c.Client.Delete(ctx, vol); err != nil {
		return err
	}
	if err := waitGone(ctx, c, "Volume", vol); err != nil {
		return err
	}
	if err := c.Client.Delete(ctx, pool); err != nil {
		return err
	}
	if err := waitGone(ctx, c, "Pool", pool); err != nil {
		return err
	}
	owned := client.MatchingLabels{flintv1.LabelPool: pool.Name}
	if err := deleteAllAndWait(ctx, c, "OSDs", &flintv1.OSDList{}, owned); err != nil {
		return err
	}
	return deleteAllAndWait(ctx, c, "OSD pods", &corev1.PodList{}, owned, client.InNamespace(localcluster.Namespace))
}

// deleteAllAndWait deletes every object of list's kind that opts select,
// until none is left.
func deleteAllAndWait(ctx context.Context, c *localcluster.Cluster, what string, list client.ObjectList, opts ...client.ListOption) error {
	left := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.List(ctx, list, opts...); err != nil {
			return false, err
		}
		objs, err := apimeta.ExtractList(list)
		if err != nil {
			return false, err
		}
		left = len(objs)
		for _, o := range objs {
			if err := client.IgnoreNotFound(c.Client.Delete(ctx, o.(client.Object))); err != nil {
				return false, err
			}
		}
		return left == 0, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("%d %s are not gone after 3 minutes", left, what)
	}
	return err
}

// waitGone waits for obj, a kind, to be deleted.
func waitGone(ctx context.Context, c *localcluster.Cluster, kind string, obj client.Object) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("%s %s is not deleted after 3 minutes", kind, obj.GetName())
	}
	return err
}

// measure runs every workload against ep; with latency, it also reads
// what the target counted of each.
func measure(ctx context.Context, perf, config string, ep endpoint, runtime time.Duration, core int, latency *latencyReader) ([]result, error) {
	var results []result
	// flint-bench's jobs, in its order: the first fills the volume, since
	// a thin lvol answers unwritten reads without touching its device.
	for _, w := range bench.Jobs {
		var before histogram
		if latency != nil {
			var err error
			if before, err = latency.read(ctx); err != nil {
				return nil, err
			}
		}
		r, err := runPerf(ctx, perf, config, ep, w, runtime, core)
		if err != nil {
			return nil, err
		}
		seconds := max(int(runtime.Seconds()), 1)
		if latency != nil {
			// The agent reads SPDK afresh only once per interval.
			time.Sleep(time.Until(before.at.Add(metricsInterval + time.Second)))
		}
		if latency != nil {
			after, err := latency.read(ctx)
			if err != nil {
				return nil, err
			}
			r.Target = after.since(before).summary(r, seconds)
		}
		fmt.Printf("  %-8s %-18s %10.0f IOPS %8.1f MiB/s avg %8.1f us p99 %8.1f us\n", config, w.Name, r.IOPS, r.MiBps, r.AvgUs, r.P99Us)
		results = append(results, r)
	}
	return results, nil
}

// runPerf runs job w with spdk_nvme_perf on core against ep.
func runPerf(ctx context.Context, perf, config string, ep endpoint, w bench.Job, runtime time.Duration, core int) (result, error) {
	trid := fmt.Sprintf("trtype:TCP adrfam:IPv4 traddr:%s trsvcid:%s subnqn:%s hostnqn:%s", ep.addr, ep.port, ep.nqn, hostNQN)
	seconds := max(int(runtime.Seconds()), 1)
	cmd := exec.CommandContext(ctx, perf, "-r", trid, "-q", strconv.Itoa(w.Depth), "-o", strconv.Itoa(w.BlockSize),
		"-w", w.RW, "-t", strconv.Itoa(seconds), "-c", fmt.Sprintf("0x%x", uint64(1)<<core), "--no-huge", "-s", "1024", "-L")
	b, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("%s %s: %v\n%s", config, w.Name, err, b)
	}
	r, err := parsePerf(string(b))
	if err != nil {
		return result{}, fmt.Errorf("%s %s: %w\n%s", config, w.Name, err, b)
	}
	r.Config, r.Client, r.Workload = config, "spdk_nvme_perf", w.Name
	return r, nil
}

var (
	totalLine      = regexp.MustCompile(`(?m)^Total\s*:\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)`)
	percentileLine = regexp.MustCompile(`(?m)^\s*([\d.]+)%\s*:\s*([\d.]+)us`)
)

// parsePerf reads spdk_nvme_perf's totals and its latency summary (-L).
func parsePerf(out string) (result, error) {
	m := totalLine.FindStringSubmatch(out)
	if m == nil {
		return result{}, errors.New("no Total line in spdk_nvme_perf's output")
	}
	var r result
	r.IOPS, _ = strconv.ParseFloat(m[1], 64)
	r.MiBps, _ = strconv.ParseFloat(m[2], 64)
	r.AvgUs, _ = strconv.ParseFloat(m[3], 64)
	// The summary lists each percentile once per namespace; the first
	// at or above each one wanted is taken.
	for _, p := range percentileLine.FindAllStringSubmatch(out, -1) {
		pct, _ := strconv.ParseFloat(p[1], 64)
		us, _ := strconv.ParseFloat(p[2], 64)
		switch {
		case r.P50Us == 0 && pct >= 50:
			r.P50Us = us
		case r.P99Us == 0 && pct >= 99:
			r.P99Us = us
		case r.P999Us == 0 && pct >= 99.9:
			r.P999Us = us
		}
	}
	if r.IOPS == 0 || r.P50Us == 0 || r.P99Us == 0 || r.P999Us == 0 {
		return result{}, fmt.Errorf("incomplete figures %+v", r)
	}
	return r, nil
}

// printTable prints each configuration's figures, the median over the
// rounds with the spread of IOPS, beside the ratios of its medians to
// raw SPDK's of as many replicas and to the same kind's of one replica,
// each against the same client's.
func printTable(w io.Writer, results []result) {
	type key struct{ client, config, workload string }
	var order []key
	runs := map[key][]result{}
	for _, r := range results {
		k := key{r.Client, r.Config, r.Workload}
		if runs[k] == nil {
			order = append(order, k)
		}
		runs[k] = append(runs[k], r)
	}
	medians := map[key]result{}
	for k, rs := range runs {
		medians[k] = median(rs)
	}
	ratios := func(k key, base string) (string, string) {
		b, ok := medians[key{k.client, base, k.workload}]
		if !ok || k.config == base {
			return "-", "-"
		}
		r := medians[k]
		return fmt.Sprintf("%.2fx", r.IOPS/b.IOPS), fmt.Sprintf("%.2fx", r.AvgUs/b.AvgUs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "CLIENT\tCONFIG\tWORKLOAD\tRUNS\tIOPS\tIOPS MIN-MAX\tMiB/s\tAVG µs\tP50 µs\tP99 µs\tP99.9 µs\tIOPS vs raw-N\tAVG vs raw-N\tIOPS vs 1 replica\tAVG vs 1 replica")
	for _, client := range []string{"spdk_nvme_perf", "kernel"} {
		for _, k := range order {
			if k.client != client {
				continue
			}
			kind, n, _ := strings.Cut(k.config, "-")
			iopsRaw, avgRaw := "-", "-"
			if kind == "flint" {
				iopsRaw, avgRaw = ratios(k, "raw-"+n)
			}
			iopsOne, avgOne := ratios(k, kind+"-1")
			r, rs := medians[k], runs[k]
			spread := "-"
			if len(rs) > 1 {
				lo, hi := rs[0].IOPS, rs[0].IOPS
				for _, x := range rs {
					lo, hi = min(lo, x.IOPS), max(hi, x.IOPS)
				}
				spread = fmt.Sprintf("%.0f-%.0f", lo, hi)
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\n", k.client, k.config, k.workload, len(rs), r.IOPS, spread, r.MiBps, r.AvgUs, r.P50Us, r.P99Us, r.P999Us, iopsRaw, avgRaw, iopsOne, avgOne)
		}
	}
	_ = tw.Flush()
}

// median gives each figure of rs its median over rs (the lower middle
// one of an even count).
func median(rs []result) result {
	figure := func(of func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = of(r)
		}
		slices.Sort(xs)
		return xs[(len(xs)-1)/2]
	}
	return result{
		Config: rs[0].Config, Client: rs[0].Client, Workload: rs[0].Workload,
		IOPS:   figure(func(r result) float64 { return r.IOPS }),
		MiBps:  figure(func(r result) float64 { return r.MiBps }),
		AvgUs:  figure(func(r result) float64 { return r.AvgUs }),
		P50Us:  figure(func(r result) float64 { return r.P50Us }),
		P99Us:  figure(func(r result) float64 { return r.P99Us }),
		P999Us: figure(func(r result) float64 { return r.P999Us }),
	}
}
