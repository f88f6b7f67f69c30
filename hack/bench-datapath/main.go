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
// a malloc bdev exported by one nvmf_tgt, then a Volume of one replica
// built by the real operator and agent over the same nvmf_tgt, launched as
// its OSD pod says. Needs FLINT_SPDK_DIR and root.
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
	"strconv"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/internal/bench"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

// hostNQN is the initiator's.
const hostNQN = "nqn.2014-08.org.nvmexpress:uuid:5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

// result is one workload's figures on one configuration.
type result struct {
	Config   string  `json:"config"`
	Workload string  `json:"workload"`
	IOPS     float64 `json:"iops"`
	MiBps    float64 `json:"mibps"`
	AvgUs    float64 `json:"avgUs"`
	P50Us    float64 `json:"p50Us"`
	P99Us    float64 `json:"p99Us"`
	P999Us   float64 `json:"p999Us"`
}

// endpoint is where the initiator connects.
type endpoint struct{ addr, port, nqn string }

func main() {
	runtime := flag.Duration("runtime", 10*time.Second, "how long each workload runs")
	out := flag.String("out", "bench-datapath.json", "where the figures are written as JSON")
	flag.Parse()
	spdkDir := os.Getenv("FLINT_SPDK_DIR")
	if spdkDir == "" {
		fmt.Fprintln(os.Stderr, "bench-datapath: set FLINT_SPDK_DIR to an SPDK build tree (build/bin/nvmf_tgt, build/bin/spdk_nvme_perf)")
		os.Exit(2)
	}
	if err := run(spdkDir, *runtime, *out); err != nil {
		fmt.Fprintf(os.Stderr, "bench-datapath: %v\n", err)
		os.Exit(1)
	}
}

func run(spdkDir string, runtime time.Duration, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	perf := filepath.Join(spdkDir, "build", "bin", "spdk_nvme_perf")
	if _, err := os.Stat(perf); err != nil {
		return fmt.Errorf("no spdk_nvme_perf in %s: %w", spdkDir, err)
	}
	fmt.Printf("bench-datapath: targets on core 0 (polling), spdk_nvme_perf on core 1, NVMe/TCP over loopback, %s per workload\n", runtime)

	// The control plane runs through both measurements, so that both see
	// the same machine; the OSD starts only after the raw target stopped.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	c, err := localcluster.Start(ctx, localcluster.Options{
		Root: ".", Nodes: []localcluster.Node{{Name: "bench-0", Zone: "a"}}, Pools: []string{"bench"},
		StartSPDK: localnode.RealSPDK(spdkDir),
		Operator:  controllers.Options{Resync: 30 * time.Second, ReplicaGrace: 5 * time.Minute, TargetGrace: 30 * time.Second, AgentLease: 20 * time.Second, VolumeWorkers: 1},
	})
	if c != nil {
		defer func() { _ = c.Stop() }()
	}
	if err != nil {
		return err
	}
	var results []result
	raw, err := measureRaw(ctx, spdkDir, perf, runtime)
	if err != nil {
		return fmt.Errorf("raw SPDK: %w", err)
	}
	results = append(results, raw...)
	flint, err := measureFlint(ctx, c, perf, runtime)
	if err != nil {
		return fmt.Errorf("a 1-replica Flint Volume: %w", err)
	}
	results = append(results, flint...)

	printTable(os.Stdout, results)
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

// measureRaw exports a malloc bdev from one nvmf_tgt on core 0, without
// Flint, and measures it.
func measureRaw(ctx context.Context, spdkDir, perf string, runtime time.Duration) ([]result, error) {
	dir, err := os.MkdirTemp("", "flint-bench-raw-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := spdklab.Binary(spdkDir)
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "spdk.sock")
	p, err := spdklab.StartCommand([]string{bin, "--no-huge", "-s", "2048", "-m", "0x1", "--disable-cpumask-locks", "-r", socket}, socket)
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	c := spdkclient.New(socket)
	defer func() { _ = c.Close() }()
	const nqn = "nqn.2026-01.io.flint:bench-raw"
	// An address of the kind the local runner gives OSD pods (127.0.1.x):
	// SPDK sends with MSG_ZEROCOPY unless the socket's address is one of
	// an interface marked loopback, and only 127.0.0.1 is, so 127.0.0.1
	// would spare the raw target the copies loopback zero-copy costs
	// (about 2x on 4 KiB reads at QD32 here) and the comparison would
	// measure the address, not Flint.
	ep := endpoint{addr: "127.0.1.254", port: "4420", nqn: nqn}
	steps := []func() error{
		func() error {
			_, err := c.BdevMallocCreate(ctx, types.BdevMallocCreateRequest{Name: "raw", NumBlocks: 256 << 20 / 4096, BlockSize: 4096})
			return err
		},
		func() error { return c.NvmfCreateTransport(ctx, types.NvmfCreateTransportRequest{Trtype: "TCP"}) },
		func() error {
			return c.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{NQN: nqn, AllowAnyHost: true, SerialNumber: "FLINTRAW0001"})
		},
		func() error {
			_, err := c.NvmfSubsystemAddNs(ctx, nqn, types.NvmfNamespaceRequest{BdevName: "raw"})
			return err
		},
		func() error {
			return c.NvmfSubsystemAddListener(ctx, nqn, types.ListenAddress{Trtype: "TCP", Adrfam: "IPv4", Traddr: ep.addr, Trsvcid: ep.port})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return measure(ctx, perf, "raw", ep, runtime)
}

// measureFlint runs one OSD of a polling Pool on core 0 under c's
// operator and a real agent, and measures a Volume of one replica on it.
func measureFlint(ctx context.Context, c *localcluster.Cluster, perf string, runtime time.Duration) ([]result, error) {
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: flintv1.PoolSpec{Replicas: 1, Devices: flintv1.PoolDevices{
			Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("1Gi")},
		}, OSD: flintv1.OSDTemplate{OSDResources: flintv1.OSDResources{CPUs: 1, Memory: ptr.To(resource.MustParse("3Gi"))}}},
	}
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec:       flintv1.VolumeSpec{Pool: "bench", Size: resource.MustParse("256Mi"), Replicas: ptr.To[int32](1), PublishedHosts: []string{hostNQN}},
	}
	for _, obj := range []client.Object{pool, vol} {
		if err := c.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	var ep endpoint
	deadline := time.Now().Add(3 * time.Minute)
	for ep.nqn == "" {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
			return nil, err
		}
		if t := vol.Status.Target; vol.Status.Phase == flintv1.VolumePhaseReady && t != nil && len(t.Endpoints) > 0 {
			ep = endpoint{addr: t.Endpoints[0].Address, port: strconv.Itoa(int(t.Endpoints[0].Port)), nqn: t.NQN}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the Volume is not Ready after 3 minutes: %s %+v", vol.Status.Phase, vol.Status.Conditions)
		}
		time.Sleep(time.Second)
	}
	return measure(ctx, perf, "flint-1", ep, runtime)
}

// measure runs every workload against ep.
func measure(ctx context.Context, perf, config string, ep endpoint, runtime time.Duration) ([]result, error) {
	var results []result
	// flint-bench's jobs, in its order: the first fills the volume, since
	// a thin lvol answers unwritten reads without touching its device.
	for _, w := range bench.Jobs {
		trid := fmt.Sprintf("trtype:TCP adrfam:IPv4 traddr:%s trsvcid:%s subnqn:%s hostnqn:%s", ep.addr, ep.port, ep.nqn, hostNQN)
		cmd := exec.CommandContext(ctx, perf, "-r", trid, "-q", strconv.Itoa(w.Depth), "-o", strconv.Itoa(w.BlockSize),
			"-w", w.RW, "-t", strconv.Itoa(max(int(runtime.Seconds()), 1)), "-c", "0x2", "--no-huge", "-s", "1024", "-L")
		b, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v\n%s", config, w.Name, err, b)
		}
		r, err := parsePerf(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w\n%s", config, w.Name, err, b)
		}
		r.Config, r.Workload = config, w.Name
		fmt.Printf("  %-8s %-18s %10.0f IOPS %8.1f MiB/s avg %8.1f us p99 %8.1f us\n", config, w.Name, r.IOPS, r.MiBps, r.AvgUs, r.P99Us)
		results = append(results, r)
	}
	return results, nil
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

// printTable prints every figure and the ratio Flint/raw.
func printTable(w io.Writer, results []result) {
	raw := map[string]result{}
	for _, r := range results {
		if r.Config == "raw" {
			raw[r.Workload] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "CONFIG\tWORKLOAD\tIOPS\tMiB/s\tAVG µs\tP50 µs\tP99 µs\tP99.9 µs\tIOPS vs raw\tAVG vs raw")
	for _, r := range results {
		ratio, lat := "-", "-"
		if b, ok := raw[r.Workload]; ok && r.Config != "raw" {
			ratio, lat = fmt.Sprintf("%.2fx", r.IOPS/b.IOPS), fmt.Sprintf("%.2fx", r.AvgUs/b.AvgUs)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\n", r.Config, r.Workload, r.IOPS, r.MiBps, r.AvgUs, r.P50Us, r.P99Us, r.P999Us, ratio, lat)
	}
	_ = tw.Flush()
}
