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

package datapath

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// #34's resync case: a 1 GiB Volume, one replica out for 10 s under 4 KiB
// random writes at QD8.
const (
	resyncVolume = 1 << 30
	resyncOut    = 10 * time.Second
	// resyncShort is a shorter outage, for what a delta saves when the
	// writes touch a smaller part of the Volume.
	resyncShort = time.Second
	resyncBlock = 4096
	resyncDepth = 8
	resyncMark  = "resync-mark"
)

// BenchmarkResync measures what a replica that comes back with its lvol
// intact costs, on real SPDK (make bench-resync): two replicas on
// flint_tgt, the OSD's SPDK; while spdk_nvme_perf writes to the Volume
// over NVMe/TCP the second is out, then returns. Twice:
//   - full: it leaves as planned (no map: what a target restart or move
//     leaves), and the raid rebuilds it whole;
//   - delta: its connection drops, the caller records it out of sync, the
//     target lets it go with a map (resync.go), and it catches up by that;
//     then again after a shorter outage (resyncShort).
//
// Printed for each: the bytes written to its lvol (its counters) and the
// time from its return to in sync. Beside them, what a delta at other
// grains would copy: at the lvstore's cluster grain measured (a snapshot
// of the in-sync replica taken at the drop, and the clusters its live
// lvol allocates after it: bdev_lvol_start_shallow_copy's unit); at a
// 64 KiB grain expected from the write count.
func BenchmarkResync(b *testing.B) {
	spdkDir := os.Getenv("FLINT_SPDK_DIR")
	if spdkDir == "" {
		b.Skip("needs real SPDK: FLINT_SPDK_DIR, or make bench-resync")
	}
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(b, 2, spdklab.FlintTgt)
	osds := startOSDsSized(ctx, b, lab, resyncVolume)
	kept, returning := lab.Targets[0].Client, lab.Targets[1].Client
	replica := exportTo(ctx, b, osds, 1, 0, true, storage.Keys{})
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{exportTo(ctx, b, osds, 0, 0, true, storage.Keys{}), replica}}
	ensureUntil(ctx, b, osds[0], spec, "the target serving both replicas", func(st storage.Target) bool { return !st.Degraded() })

	spec.Members[1] = storage.MemberSpec{OSD: replica.OSD, Leaving: true}
	ensureUntil(ctx, b, osds[0], spec, "the replica leaving", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_MISSING
	})
	keptLvol := agentv1.LvstoreName("osd-0") + "/" + volume
	mark := agentv1.LvstoreName("osd-0") + "/" + resyncMark
	_, err := kept.BdevLvolSnapshot(ctx, keptLvol, resyncMark)
	must(b, err)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	iops := randomWrites(ctx, b, spdkDir, target, resyncOut)
	clusters, clusterSize := allocatedClusters(ctx, b, kept, keptLvol)
	// The mark has one clone, the live lvol: SPDK folds it into it.
	must(b, kept.BdevLvolDelete(ctx, mark))

	returningLvol := agentv1.LvstoreName("osd-1") + "/" + volume
	before := bytesWritten(ctx, b, returning, returningLvol)
	replica.InSync = false
	spec.Members[1] = replica
	start := time.Now()
	ensureUntil(ctx, b, osds[0], spec, "the returning replica in sync", func(st storage.Target) bool { return !st.Degraded() })
	took := time.Since(start)
	copied := bytesWritten(ctx, b, returning, returningLvol) - before
	if copied < resyncVolume {
		b.Errorf("the rebuild wrote %d bytes to the returning replica, under the Volume's %d: not a whole copy", copied, resyncVolume)
	}

	deltaIOPS, deltaCopied, deltaTook := deltaResync(ctx, b, spdkDir, lab, osds, spec, target, resyncOut)
	shortIOPS, shortCopied, shortTook := deltaResync(ctx, b, spdkDir, lab, osds, spec, target, resyncShort)

	writes := iops * resyncOut.Seconds()
	clusterBytes := float64(clusters * clusterSize)
	mib := func(bytes float64) float64 { return bytes / (1 << 20) }
	b.Logf("a %d MiB Volume of 2 replicas on real SPDK, one out for %v under 4 KiB random writes at QD%d (spdk_nvme_perf over NVMe/TCP: %.0f IOPS, %.0f writes)",
		resyncVolume>>20, resyncOut, resyncDepth, iops, writes)
	b.Logf("full (SPDK raid1 rebuild, what runs): %.0f MiB copied, in sync %.1f s after the return (%.0f MiB/s), measured from the call that adds it to the first status in sync, polled every 500 ms",
		mib(float64(copied)), took.Seconds(), mib(float64(copied))/took.Seconds())
	b.Logf("delta at the cluster grain (%d KiB clusters, a snapshot at the drop): %d of %d clusters written since, %.0f MiB, %.0f%% of full (measured)",
		clusterSize>>10, clusters, resyncVolume/clusterSize, mib(clusterBytes), 100*clusterBytes/float64(copied))
	b.ReportMetric(mib(float64(copied)), "full-MiB")
	b.ReportMetric(took.Seconds(), "full-s")
	b.ReportMetric(mib(clusterBytes), "cluster-delta-MiB")
	// A map copies the regions the writes touched: N(1-(1-1/N)^writes)
	// of N, for writes spread at random.
	deltaWrites := deltaIOPS * resyncOut.Seconds()
	for _, grain := range []int{resyncBlock, 64 << 10} {
		regions := float64(resyncVolume / grain)
		bytes := regions * (1 - math.Pow(1-1/regions, writes)) * float64(grain)
		b.Logf("delta at a %d KiB grain: %.0f MiB, %.0f%% of full (expected from the full run's write count)", grain>>10, mib(bytes), 100*bytes/float64(copied))
		b.ReportMetric(mib(bytes), fmt.Sprintf("delta-%dKiB-MiB", grain>>10))
	}
	regions := float64(resyncVolume / resyncBlock)
	expected := regions * (1 - math.Pow(1-1/regions, deltaWrites)) * resyncBlock
	b.Logf("delta (the flint_volume's 4 KiB map, what runs now): %.0f writes while out (%.0f IOPS); %.0f MiB copied, %.0f%% of full (%.0f MiB expected from the write count), in sync %.1f s after the return",
		deltaWrites, deltaIOPS, mib(float64(deltaCopied)), 100*float64(deltaCopied)/float64(copied), mib(expected), deltaTook.Seconds())
	b.ReportMetric(mib(float64(deltaCopied)), "delta-MiB")
	b.ReportMetric(deltaTook.Seconds(), "delta-s")
	shortWrites := shortIOPS * resyncShort.Seconds()
	b.Logf("delta after a shorter outage (%v of the same writes: %.0f writes, %.0f IOPS): %.0f MiB copied, %.0f%% of full, in sync %.1f s after the return",
		resyncShort, shortWrites, shortIOPS, mib(float64(shortCopied)), 100*float64(shortCopied)/float64(copied), shortTook.Seconds())
	b.ReportMetric(mib(float64(shortCopied)), "short-delta-MiB")
	b.ReportMetric(shortTook.Seconds(), "short-delta-s")
	if deltaCopied >= copied {
		b.Errorf("the delta resync wrote %d bytes to the returning replica, no fewer than the full rebuild's %d", deltaCopied, copied)
	}
}

// deltaResync takes the in-sync second replica of spec out as a lost
// connection does (its listener removed), records it out of sync so the
// target lets it go with a map, writes at random for out, and
// brings it back. It returns the writer's IOPS, the bytes written to the
// replica until it was in sync, and how long that took from its return.
func deltaResync(ctx context.Context, b *testing.B, spdkDir string, lab *spdklab.Lab, osds []*storage.Engine, spec storage.TargetSpec, target storage.Subsystem, out time.Duration) (float64, uint64, time.Duration) {
	b.Helper()
	returning, replica := lab.Targets[1].Client, spec.Members[1]
	replica.InSync = true
	spec.Members[1] = replica
	listener := types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: replica.Export.Address, Trsvcid: strconv.Itoa(replica.Export.Port)}
	must(b, returning.NvmfSubsystemRemoveListener(ctx, replica.Export.NQN, listener))
	ensureUntil(ctx, b, osds[0], spec, "the cut replica holding writes", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	spec.Members[1].InSync = false
	ensureUntil(ctx, b, osds[0], spec, "the cut replica let go", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_MISSING
	})
	iops := randomWrites(ctx, b, spdkDir, target, out)

	returningLvol := agentv1.LvstoreName("osd-1") + "/" + volume
	before := bytesWritten(ctx, b, returning, returningLvol)
	must(b, returning.NvmfSubsystemAddListener(ctx, replica.Export.NQN, listener))
	start := time.Now()
	ensureUntil(ctx, b, osds[0], spec, "the returning replica in sync", func(st storage.Target) bool { return !st.Degraded() })
	return iops, bytesWritten(ctx, b, returning, returningLvol) - before, time.Since(start)
}

// perfTotal is spdk_nvme_perf's summary line: IOPS, MiB/s, average µs.
var perfTotal = regexp.MustCompile(`(?m)^Total\s*:\s*([\d.]+)\s`)

// randomWrites runs spdk_nvme_perf's 4 KiB random writes at QD8 against e
// for d, on core 1 (the lab's nvmf_tgt run on core 0), and returns the
// IOPS it reports.
func randomWrites(ctx context.Context, t testing.TB, spdkDir string, e storage.Subsystem, d time.Duration) float64 {
	t.Helper()
	trid := fmt.Sprintf("trtype:TCP adrfam:IPv4 traddr:%s trsvcid:%d subnqn:%s hostnqn:%s", e.Address, e.Port, e.NQN, hostNQN)
	out, err := exec.CommandContext(ctx, filepath.Join(spdkDir, "build", "bin", "spdk_nvme_perf"), "-r", trid,
		"-q", strconv.Itoa(resyncDepth), "-o", strconv.Itoa(resyncBlock), "-w", "randwrite",
		"-t", strconv.Itoa(int(d.Seconds())), "-c", "0x2", "--no-huge", "-s", "1024").CombinedOutput()
	if err != nil {
		t.Fatalf("spdk_nvme_perf: %v\n%s", err, out)
	}
	m := perfTotal.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no Total line in spdk_nvme_perf's output:\n%s", out)
	}
	iops, err := strconv.ParseFloat(string(m[1]), 64)
	must(t, err)
	return iops
}

// allocatedClusters is how many clusters lvol holds itself, and their size.
func allocatedClusters(ctx context.Context, t testing.TB, c *client.Client, lvol string) (uint64, uint64) {
	t.Helper()
	bdevs, err := c.BdevGetBdevs(ctx, lvol)
	must(t, err)
	if len(bdevs) != 1 || bdevs[0].DriverSpecific.Lvol == nil {
		t.Fatalf("bdev_get_bdevs %s: %+v, want one lvol", lvol, bdevs)
	}
	stores, err := c.BdevLvolGetLvstores(ctx, types.LvstoreSelector{UUID: bdevs[0].DriverSpecific.Lvol.LvolStoreUUID})
	must(t, err)
	return bdevs[0].DriverSpecific.Lvol.NumAllocatedClusters, stores[0].ClusterSize
}

// bytesWritten is the bytes written to bdev since it was registered.
func bytesWritten(ctx context.Context, t testing.TB, c *client.Client, bdev string) uint64 {
	t.Helper()
	stat, err := c.BdevGetIostat(ctx, bdev)
	must(t, err)
	if len(stat.Bdevs) != 1 {
		t.Fatalf("bdev_get_iostat %s: %+v, want one bdev", bdev, stat)
	}
	return stat.Bdevs[0].BytesWritten
}
