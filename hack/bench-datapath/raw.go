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
	"path/filepath"
	"strconv"
	"time"

	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
)

// rawNQN is the subsystem raw-N exports its raid1 (or, for one, its
// lvol) by; replica i of raw-N exports its lvol by rawNQN-i.
const rawNQN = "nqn.2026-01.io.flint:bench-raw"

// rawAddress is where process i of raw-N listens: an address of the kind
// the local runner gives OSD pods (127.0.1.x). SPDK sends with
// MSG_ZEROCOPY unless the socket's address is one of an interface marked
// loopback, and only 127.0.0.1 is: 127.0.0.1 would spare raw-N the copies
// loopback zero-copy costs (about 2x on 4 KiB reads at QD32 here), and
// the comparison would measure the address, not Flint.
func rawAddress(i int) string { return fmt.Sprintf("127.0.1.%d", 250+i) }

// measureRaw builds by hand, with SPDK's own RPCs and nothing of Flint,
// what a Flint Volume of len(place.cores) replicas is made of: one
// nvmf_tgt per replica on the core its OSD polled on, each a malloc
// device of the Pool's size with an lvstore and a thin lvol of the
// Volume's size; the replicas export theirs over NVMe/TCP, and the
// first, the target, joins its own and theirs in a raid1 it exports.
// Then it measures that as it measured flint-N, from the same core.
func measureRaw(ctx context.Context, spdkDir, perf string, runtime time.Duration, place placement, kernel *kernelClient) ([]result, error) {
	n := len(place.cores)
	config := fmt.Sprintf("raw-%d", n)
	dir, err := os.MkdirTemp("", "flint-bench-raw-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := spdklab.Binary(spdkDir)
	if err != nil {
		return nil, err
	}
	clients := make([]*spdkclient.Client, n)
	for i, core := range place.cores {
		socket := filepath.Join(dir, fmt.Sprintf("spdk-%d.sock", i))
		p, err := spdklab.StartCommand([]string{bin, "--no-huge", "-s", strconv.Itoa(osdMemoryMiB), "-m", fmt.Sprintf("0x%x", uint64(1)<<core), "--disable-cpumask-locks", "-r", socket}, socket)
		if err != nil {
			return nil, fmt.Errorf("%s: start nvmf_tgt %d: %w", config, i, err)
		}
		defer p.Kill()
		clients[i] = spdkclient.New(socket)
		defer func() { _ = clients[i].Close() }()
	}
	// The replicas first, each exported, then attached by the target.
	target := clients[0]
	var remotes []string
	for i := 1; i < n; i++ {
		lvol, err := rawLvol(ctx, clients[i])
		if err != nil {
			return nil, fmt.Errorf("%s: replica %d: %w", config, i, err)
		}
		nqn := fmt.Sprintf("%s-%d", rawNQN, i)
		if err := rawExport(ctx, clients[i], nqn, lvol, rawAddress(i)); err != nil {
			return nil, fmt.Errorf("%s: replica %d: %w", config, i, err)
		}
		bdevs, err := target.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{
			Name: fmt.Sprintf("replica%d", i), Trtype: "TCP", Adrfam: "ipv4", Traddr: rawAddress(i), Trsvcid: "4420", Subnqn: nqn,
		})
		if err == nil && len(bdevs) != 1 {
			err = fmt.Errorf("attached %v, want one namespace", bdevs)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: the target attaches replica %d: %w", config, i, err)
		}
		remotes = append(remotes, bdevs[0])
	}
	exported, err := rawLvol(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("%s: the target: %w", config, err)
	}
	if n > 1 {
		bases := append([]string{exported}, remotes...)
		exported = "raid"
		if err := target.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: exported, RaidLevel: "raid1", BaseBdevs: bases}); err != nil {
			return nil, fmt.Errorf("%s: raid1 over %v: %w", config, bases, err)
		}
	}
	if err := rawExport(ctx, target, rawNQN, exported, rawAddress(0)); err != nil {
		return nil, fmt.Errorf("%s: the target: %w", config, err)
	}
	fmt.Printf("  %s: %d nvmf_tgt (polling, cores %v, the target on core %d); initiators on core %d\n", config, n, place.cores, place.cores[0], place.initiator)
	ep := endpoint{addr: rawAddress(0), port: "4420", nqn: rawNQN}
	results, err := measure(ctx, perf, config, ep, runtime, place.initiator, nil)
	if err != nil {
		return nil, err
	}
	return kernel.measure(ctx, config, ep, place.initiator, results)
}

// rawLvol makes the device, lvstore and thin lvol of one replica, as an
// OSD of the bench's Pools and a replica of its Volumes are, and returns
// the lvol's bdev.
func rawLvol(ctx context.Context, c *spdkclient.Client) (string, error) {
	if _, err := c.BdevMallocCreate(ctx, types.BdevMallocCreateRequest{Name: "device", NumBlocks: poolDeviceBytes / 4096, BlockSize: 4096}); err != nil {
		return "", fmt.Errorf("malloc device: %w", err)
	}
	if _, err := c.BdevLvolCreateLvstore(ctx, types.BdevLvolCreateLvstoreRequest{BdevName: "device", LvsName: "lvs", ClearMethod: "unmap"}); err != nil {
		return "", fmt.Errorf("lvstore: %w", err)
	}
	lvol, err := c.BdevLvolCreate(ctx, types.BdevLvolCreateRequest{LvolName: "volume", SizeInMiB: volumeBytes >> 20, ThinProvision: true, LvsName: "lvs"})
	if err != nil {
		return "", fmt.Errorf("thin lvol: %w", err)
	}
	return lvol, nil
}

// rawExport exports bdev by nqn over NVMe/TCP at address, to any host.
func rawExport(ctx context.Context, c *spdkclient.Client, nqn, bdev, address string) error {
	if err := c.NvmfCreateTransport(ctx, types.NvmfCreateTransportRequest{Trtype: "TCP"}); err != nil {
		return fmt.Errorf("TCP transport: %w", err)
	}
	if err := c.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{NQN: nqn, AllowAnyHost: true, SerialNumber: "FLINTRAW0001"}); err != nil {
		return fmt.Errorf("subsystem %s: %w", nqn, err)
	}
	if _, err := c.NvmfSubsystemAddNs(ctx, nqn, types.NvmfNamespaceRequest{BdevName: bdev}); err != nil {
		return fmt.Errorf("namespace %s: %w", bdev, err)
	}
	if err := c.NvmfSubsystemAddListener(ctx, nqn, types.ListenAddress{Trtype: "TCP", Adrfam: "IPv4", Traddr: address, Trsvcid: "4420"}); err != nil {
		return fmt.Errorf("listener %s:4420: %w", address, err)
	}
	return nil
}
