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

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/bench"
)

// kernelClient measures through the kernel's NVMe/TCP host in the VM
// lab's guest (hack/vmlab/kernel-bench.sh) with flint-bench, as a Pod's
// volume is used. A nil kernelClient measures nothing.
type kernelClient struct{ runtime time.Duration }

func newKernelClient(on bool, runtime time.Duration) *kernelClient {
	if !on {
		return nil
	}
	return &kernelClient{runtime: runtime}
}

// kernelSize is the region the guest's jobs use: a TCG guest moves a few
// MiB a second, and the first job writes the region once.
const kernelSize = "32Mi"

// measure appends to results the guest's figures of config at ep.
func (k *kernelClient) measure(ctx context.Context, config string, ep endpoint, core int, results []result) ([]result, error) {
	if k == nil {
		return results, nil
	}
	cmd := exec.CommandContext(ctx, "hack/vmlab/kernel-bench.sh", ep.addr, ep.port, ep.nqn, hostNQN, k.runtime.String(), kernelSize)
	// The guest runs on the initiator's core, as spdk_nvme_perf does.
	cmd.Env = append(os.Environ(), fmt.Sprintf("KBENCH_CPUS=%d", core))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s through the kernel host: %w", config, err)
	}
	_, report, ok := strings.Cut(string(out), "KBENCH-REPORT\n")
	if !ok {
		return nil, fmt.Errorf("%s through the kernel host: no report in %q", config, out)
	}
	report, _, _ = strings.Cut(report, "\n")
	figures, err := bench.Decode(report)
	if err != nil {
		return nil, fmt.Errorf("%s through the kernel host: %w", config, err)
	}
	for _, f := range figures {
		r := result{Config: config, Client: "kernel", Workload: f.Job, IOPS: f.OpsPerSec, MiBps: f.BytesPerSec / (1 << 20),
			AvgUs: f.AvgUs, P50Us: f.P50Us, P99Us: f.P99Us, P999Us: f.P999Us}
		fmt.Printf("  %-8s %-18s %10.0f IOPS %8.1f MiB/s avg %8.1f us p99 %8.1f us (kernel host, TCG guest)\n", config, r.Workload, r.IOPS, r.MiBps, r.AvgUs, r.P99Us)
		results = append(results, r)
	}
	return results, nil
}

func (k *kernelClient) runtimeString() string {
	if k == nil {
		return "nothing"
	}
	return k.runtime.String()
}
