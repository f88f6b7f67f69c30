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
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// flint_volume (flint_tgt's own bdev module, osd-image/flinttgt) on real
// SPDK: these tests hold what docs/proposals/volume-vbdev.md builds on.

const (
	fvBlocks    = 4096 // 16 MiB of 4 KiB blocks
	fvBlockSize = 4096
)

// A member marked when it leaves catches up by a copy of what was written
// since, and nothing else: the map holds exactly the host's writes, the
// copy moves exactly those blocks, and after it the member holds what
// the raid does. Then the member rejoins under a paused volume: the raid
// is made again with it, attached, and the host's write that waited
// through the pause completes.
func TestFlintVolumeCatchesUpAMemberByItsMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab := flintTgtLab(t, 1)
	c := lab.Targets[0].Client
	for _, m := range []string{"m0", "m1", "back"} {
		_, err := c.BdevMallocCreate(ctx, types.BdevMallocCreateRequest{Name: m, NumBlocks: fvBlocks, BlockSize: fvBlockSize})
		must(t, err)
	}
	must(t, c.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: "r", RaidLevel: "raid1", BaseBdevs: []string{"m0", "m1"}}))
	must(t, c.FlintVolumeCreate(ctx, types.FlintVolumeCreateRequest{Name: "fv", BaseBdev: "r"}))
	must(t, c.FlintVolumeCreate(ctx, types.FlintVolumeCreateRequest{Name: "fv", BaseBdev: "r"})) // the same call again
	vol := serveBdev(ctx, t, c, "fv", "vol")
	dd := newHost(t, lab)

	// "back" left with the data it had: the volume's, all zeros.
	must(t, c.FlintVolumeMark(ctx, "fv", "back"))
	first, second := randomBytes(t, 1<<20), randomBytes(t, 1<<20)
	dd.write(vol, hostNQN, first, 2<<20)
	dd.write(vol, hostNQN, second, 9<<20)
	dirty, err := c.FlintVolumeGetDirty(ctx, types.FlintVolumeGetDirtyRequest{Name: "fv", Member: "back"})
	must(t, err)
	want := []types.BlockRange{{OffsetBlocks: 512, NumBlocks: 256}, {OffsetBlocks: 2304, NumBlocks: 256}}
	if dirty.DirtyBlocks != 512 || !slices.Equal(dirty.Ranges, want) {
		t.Fatalf("the map holds %+v, want the host's two writes %v (512 blocks)", dirty, want)
	}

	dirty = copyMember(ctx, t, c, "fv", "back", "back")
	if dirty.CopiedBlocks != 512 || dirty.DirtyBlocks != 0 {
		t.Errorf("after the copy the map reads %+v, want 512 blocks copied and none dirty", dirty)
	}
	expected := make([]byte, fvBlocks*fvBlockSize)
	copy(expected[2<<20:], first)
	copy(expected[9<<20:], second)
	backSub := serveBdev(ctx, t, c, "back", "back")
	if got := dd.read(backSub, hostNQN, len(expected)); !bytes.Equal(got, expected) {
		t.Fatalf("after the copy the member differs from the volume at byte %s", firstDifference(got, expected))
	}
	must(t, c.NvmfDeleteSubsystem(ctx, backSub.NQN))

	// The rejoin: paused, the raid is made again with the member, the
	// volume attached to it, resumed. A host write meanwhile waits.
	must(t, c.FlintVolumePause(ctx, "fv"))
	must(t, c.FlintVolumePause(ctx, "fv")) // the same call again
	third := randomBytes(t, 1<<20)
	wrote := make(chan error, 1)
	go func() { wrote <- dd.tryWrite(vol, hostNQN, third, 12<<20) }()
	must(t, c.BdevRaidDelete(ctx, "r"))
	info := flintVolumeInfo(ctx, t, c, "fv")
	if info.BaseBdev != "" || !info.Paused {
		t.Fatalf("with its raid deleted the flint_volume reads %+v, want paused with no base", info)
	}
	must(t, c.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: "r", RaidLevel: "raid1", BaseBdevs: []string{"m0", "m1", "back"}}))
	must(t, c.FlintVolumeAttach(ctx, types.FlintVolumeAttachRequest{Name: "fv", BaseBdev: "r"}))
	select {
	case err := <-wrote:
		t.Fatalf("a host write completed while the volume was paused (%v)", err)
	case <-time.After(time.Second):
	}
	must(t, c.FlintVolumeResume(ctx, "fv"))
	select {
	case err := <-wrote:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the host's write did not complete within a minute of the resume")
	}
	copy(expected[12<<20:], third)
	if got := dd.read(vol, hostNQN, len(expected)); !bytes.Equal(got, expected) {
		t.Fatalf("after the rejoin the volume differs from what was written at byte %s", firstDifference(got, expected))
	}

	// Every member holds it, the rejoined one too.
	must(t, c.FlintVolumeForget(ctx, "fv", "back"))
	must(t, c.NvmfDeleteSubsystem(ctx, vol.NQN))
	must(t, c.FlintVolumeDelete(ctx, "fv"))
	must(t, c.FlintVolumeDelete(ctx, "fv")) // gone already
	must(t, c.BdevRaidDelete(ctx, "r"))
	for _, m := range []string{"m0", "m1", "back"} {
		if got := dd.read(serveBdev(ctx, t, c, m, m), hostNQN, len(expected)); !bytes.Equal(got, expected) {
			t.Errorf("member %s differs from what was written at byte %s", m, firstDifference(got, expected))
		}
	}
}

// flintTgtLab is a lab of n flint_tgt, whose flint_volume module the
// double does not model: the test is skipped there.
func flintTgtLab(t *testing.T, n int) *spdklab.Lab {
	t.Helper()
	lab := spdklab.NewOf(t, n, spdklab.FlintTgt)
	if !lab.Real {
		t.Skip("flint_volume is flint_tgt's module, which the double does not model: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	return lab
}

// copyMember copies member's dirty blocks of flint_volume fv to bdev and
// returns the map once the copy ended.
func copyMember(ctx context.Context, t *testing.T, c *client.Client, fv, member, bdev string) types.FlintVolumeDirty {
	t.Helper()
	must(t, c.FlintVolumeCopy(ctx, types.FlintVolumeCopyRequest{Name: fv, Member: member, MemberBdev: bdev}))
	for {
		dirty, err := c.FlintVolumeGetDirty(ctx, types.FlintVolumeGetDirtyRequest{Name: fv, Member: member})
		must(t, err)
		if dirty.CopyError != "" {
			t.Fatalf("the copy of %s failed: %s", member, dirty.CopyError)
		}
		if !dirty.Copying {
			return dirty
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the copy of %s runs still: %+v", member, dirty)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serveBdev exports bdev to any host over loopback NVMe/TCP as a
// subsystem of its own, named after name.
func serveBdev(ctx context.Context, t *testing.T, c *client.Client, bdev, name string) storage.Subsystem {
	t.Helper()
	sub := storage.Subsystem{NQN: "nqn.2016-06.io.flint:test-" + name, Transport: "tcp", Address: "127.0.0.1"}
	if transports, err := c.NvmfGetTransports(ctx, "tcp"); err != nil || len(transports) == 0 {
		must(t, c.NvmfCreateTransport(ctx, types.NvmfCreateTransportRequest{Trtype: "tcp"}))
	}
	must(t, c.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{NQN: sub.NQN, AllowAnyHost: true}))
	_, err := c.NvmfSubsystemAddNs(ctx, sub.NQN, types.NvmfNamespaceRequest{BdevName: bdev})
	must(t, err)
	port := spdklab.FreePort(t)
	sub.Port, _ = strconv.Atoi(port)
	must(t, c.NvmfSubsystemAddListener(ctx, sub.NQN, types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: sub.Address, Trsvcid: port}))
	return sub
}

// flintVolumeInfo is bdev_get_bdevs' word on a flint_volume.
func flintVolumeInfo(ctx context.Context, t *testing.T, c *client.Client, name string) types.FlintVolumeInfo {
	t.Helper()
	bdevs, err := c.BdevGetBdevs(ctx, name)
	must(t, err)
	if len(bdevs) != 1 || bdevs[0].DriverSpecific.FlintVolume == nil {
		t.Fatalf("bdev_get_bdevs %s: %+v, want one flint_volume", name, bdevs)
	}
	return *bdevs[0].DriverSpecific.FlintVolume
}

// firstDifference is the first offset where a and b differ.
func firstDifference(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return strconv.Itoa(i)
		}
	}
	return fmt.Sprintf("%d (lengths %d and %d)", min(len(a), len(b)), len(a), len(b))
}

// A replica whose SPDK froze under writes, recorded out of sync and let
// go, then back with its lvol intact, catches up by its map: the
// flint_volume marked it before the agent let it go, the agent copies to
// it what it missed, in rounds, and joins it to the raid again under a
// short pause. It takes the blocks written while it was out, not the
// volume, and afterwards holds every acknowledged write.
func TestAReplicaBackFromAnOutageCatchesUpByItsMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := outage(ctx, t)
	lab, osds, spec := o.lab, o.osds, o.spec

	// Back, with its lvol as it was: caught up by the map.
	lab.Targets[1].Freeze(false)
	lvol := agentv1.LvstoreName("osd-1") + "/" + volume
	before := bytesWritten(ctx, t, lab.Targets[1].Client, lvol)
	start := time.Now()
	var percents []int
	ensureUntil(ctx, t, osds[0], spec, "the replica back in sync", func(st storage.Target) bool {
		if st.Members[1].State == agentv1.MemberState_MEMBER_STATE_REBUILDING {
			percents = append(percents, st.Members[1].RebuildPercent)
		}
		return !st.Degraded()
	})
	copied := bytesWritten(ctx, t, lab.Targets[1].Client, lvol) - before
	t.Logf("the replica caught up in %.1fs, %d KiB written to it (progress seen: %v), for the %d KiB written while it was out, of a %d KiB volume",
		time.Since(start).Seconds(), copied>>10, percents, 2*chunk>>10, volSize>>10)
	if copied < 2*chunk || copied >= volSize/2 {
		t.Errorf("the replica took %d KiB to catch up, want the %d KiB written while it was out, not the volume's %d KiB", copied>>10, 2*chunk>>10, volSize>>10)
	}
	if info := flintVolumeInfo(ctx, t, lab.Targets[0].Client, "volume_"+volume); len(info.Maps) != 0 || info.Paused || info.BaseBdev != "raid_"+volume {
		t.Errorf("after the join the flint_volume reads %+v, want its raid, no map, not paused", info)
	}
	o.write(randomChunk(t), 3*chunk)
	o.check(ctx)
}

// A replica made anew on the same OSD while it was out (empty, the same
// name) is no longer the one its map was made for: it is rebuilt whole,
// and the stale map is dropped.
func TestAReplicaMadeAnewIsRebuiltWholeNotFromItsMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := outage(ctx, t)
	lab, osds, spec := o.lab, o.osds, o.spec

	lab.Targets[1].Freeze(false)
	must(t, osds[1].DeleteReplica(ctx, volume))
	_, err := osds[1].CreateReplica(ctx, volume, volSize)
	must(t, err)
	spec.Members[1] = exportTo(ctx, t, osds, 1, 0, false, storage.Keys{})
	lvol := agentv1.LvstoreName("osd-1") + "/" + volume
	before := bytesWritten(ctx, t, lab.Targets[1].Client, lvol)
	ensureUntil(ctx, t, osds[0], spec, "the new replica in sync", func(st storage.Target) bool { return !st.Degraded() })
	if copied := bytesWritten(ctx, t, lab.Targets[1].Client, lvol) - before; copied < volSize {
		t.Errorf("the new replica took %d KiB, want the whole volume's %d KiB: a map of the old one must not serve it", copied>>10, volSize>>10)
	}
	if info := flintVolumeInfo(ctx, t, lab.Targets[0].Client, "volume_"+volume); len(info.Maps) != 0 {
		t.Errorf("after the rebuild the flint_volume keeps maps %+v, want none", info.Maps)
	}
	o.check(ctx)
}

// anOutage is a volume of two replicas whose second was frozen under a
// write, recorded out of sync and let go with a map, and written while
// out; its SPDK is still frozen.
type anOutage struct {
	t      *testing.T
	lab    *spdklab.Lab
	osds   []*storage.Engine
	spec   storage.TargetSpec
	dd     *host
	target storage.Subsystem
	want   []byte
}

func outage(ctx context.Context, t *testing.T) *anOutage {
	t.Helper()
	lab := flintTgtLab(t, 2)
	t.Cleanup(func() { lab.Targets[1].Freeze(false) })
	osds, spec := twoReplicas(ctx, t, lab)
	o := &anOutage{t: t, lab: lab, osds: osds, spec: spec, dd: newHost(t, lab), target: osds[0].Endpoint(), want: make([]byte, volSize)}
	o.target.NQN = agentv1.VolumeNQN(volume)
	o.write(randomChunk(t), 0)

	// The replica's SPDK freezes; a write waits for it until the caller
	// records it out of sync, and the target lets it go.
	lab.Targets[1].Freeze(true)
	held := randomChunk(t)
	wrote := make(chan error, 1)
	go func() { wrote <- o.dd.tryWrite(o.target, hostNQN, held, chunk) }()
	ensureUntil(ctx, t, osds[0], o.spec, "the frozen replica holding writes", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	select {
	case err := <-wrote:
		t.Fatalf("a write completed (%v) while a member counted in sync was frozen", err)
	default:
	}
	o.spec.Members[1].InSync = false
	ensureUntil(ctx, t, osds[0], o.spec, "the frozen replica let go", func(st storage.Target) bool {
		return st.Members[1].State != agentv1.MemberState_MEMBER_STATE_HELD && st.Members[1].State != agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	select {
	case err := <-wrote:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the held write did not complete within a minute of the replica's let-go")
	}
	copy(o.want[chunk:], held)
	info := flintVolumeInfo(ctx, t, lab.Targets[0].Client, "volume_"+volume)
	if len(info.Maps) != 1 || !strings.HasPrefix(info.Maps[0].Member, "osd-1/") {
		t.Fatalf("the flint_volume's maps are %+v, want one of osd-1's replica", info.Maps)
	}
	o.write(randomChunk(t), 2*chunk)
	return o
}

// write writes data at offset through the target, acknowledged.
func (o *anOutage) write(data []byte, offset int) {
	o.t.Helper()
	o.dd.write(o.target, hostNQN, data, offset)
	copy(o.want[offset:], data)
}

// check reads the volume back, stops the target with both replicas in
// sync, and checksums both against every acknowledged write.
func (o *anOutage) check(ctx context.Context) {
	t := o.t
	t.Helper()
	if got := o.dd.read(o.target, hostNQN, volSize); !bytes.Equal(got, o.want) {
		t.Error("the volume does not read back what was acknowledged")
	}
	stopped, err := o.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1"}, nil)
	must(t, err)
	if !slices.Equal(stopped.InSync, []string{"osd-0", "osd-1"}) {
		t.Errorf("the stopped target had %v in sync, want both", stopped.InSync)
	}
	expectReplicas(ctx, t, o.dd, o.osds, []int{0, 1}, o.want)
}

// A member let go while the raid still rebuilds it never held every
// acknowledged write: it gets no map, and is rebuilt whole when it
// returns, not joined from a map of what it missed since.
func TestAMemberLetGoMidRebuildGetsNoMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := flintTgtLab(t, 2)
	osds := startOSDs(ctx, t, lab)
	replica := exportTo(ctx, t, osds, 1, 0, false, storage.Keys{})
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN}, RebuildMaxMiBPerSec: 1,
		Members: []storage.MemberSpec{exportTo(ctx, t, osds, 0, 0, true, storage.Keys{}), replica}}
	ensureUntil(ctx, t, osds[0], spec, "the replica being rebuilt", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_REBUILDING
	})
	listener := types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: replica.Export.Address, Trsvcid: strconv.Itoa(replica.Export.Port)}
	must(t, lab.Targets[1].Client.NvmfSubsystemRemoveListener(ctx, replica.Export.NQN, listener))
	ensureUntil(ctx, t, osds[0], spec, "the cut replica let go", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_MISSING
	})
	if info := flintVolumeInfo(ctx, t, lab.Targets[0].Client, "volume_"+volume); len(info.Maps) != 0 {
		t.Fatalf("a member let go mid-rebuild got maps %+v, want none", info.Maps)
	}
}

// A join cut short is put right by the next calls: a flint_volume left
// paused is resumed, and one left without its raid makes the target lost
// to a resuming call (as after an SPDK restart), then is attached to the
// raid the operator's re-assembly makes, and resumed; a host writes
// through it again.
func TestAJoinCutShortIsPutRight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := flintTgtLab(t, 2)
	osds, spec := twoReplicas(ctx, t, lab)
	c, fv := lab.Targets[0].Client, "volume_"+volume
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)

	must(t, c.FlintVolumePause(ctx, fv))
	_, err := osds[0].EnsureTarget(ctx, spec)
	must(t, err)
	if info := flintVolumeInfo(ctx, t, c, fv); info.Paused {
		t.Fatalf("the next call left the flint_volume paused: %+v", info)
	}

	must(t, c.FlintVolumePause(ctx, fv))
	must(t, c.BdevRaidDelete(ctx, "raid_"+volume))
	spec.Resume = true
	if _, err := osds[0].EnsureTarget(ctx, spec); !errors.Is(err, storage.ErrTargetLost) {
		t.Fatalf("a resuming call on a target whose raid is gone answered %v, want it lost", err)
	}
	// The operator re-assembles it from its own replica, the other out of
	// sync.
	spec.Resume, spec.Members[1].InSync = false, false
	ensureUntil(ctx, t, osds[0], spec, "the target re-assembled and the other replica back", func(st storage.Target) bool { return !st.Degraded() })
	if info := flintVolumeInfo(ctx, t, c, fv); info.Paused || info.BaseBdev != "raid_"+volume {
		t.Fatalf("after the re-assembly the flint_volume reads %+v, want its raid and not paused", info)
	}
	data := randomChunk(t)
	dd.write(target, hostNQN, data, 0)
	if got := dd.read(target, hostNQN, chunk); !bytes.Equal(got, data) {
		t.Error("the re-assembled volume does not read back what was written")
	}
}

// A target re-assembled from its remote replica alone (its own replica
// out of sync: it moved there, or its SPDK restarted) gets the local lvol
// back by a rebuild, and with it a raid that no longer takes FLUSH: SPDK's
// raid1 takes it only while every member does, and lvols keep no volatile
// cache. A host's FLUSH through the volume still completes. The kernel
// host sends one with every synchronous write: failed, each came back as
// an I/O error for as long as the target served (the e2e storm's round
// that stopped the target's SPDK until its restart).
func TestAHostFlushesThroughATargetThatRebuiltItsOwnReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab := flintTgtLab(t, 3)
	const nvmeFlush = 0x00 // the NVM command set's Flush
	osds := startOSDs(ctx, t, lab)
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{exportTo(ctx, t, osds, 0, 0, false, storage.Keys{}), exportTo(ctx, t, osds, 1, 0, true, storage.Keys{})}}
	ensureUntil(ctx, t, osds[0], spec, "the local replica rebuilt", func(st storage.Target) bool { return !st.Degraded() })
	chainHost(ctx, t, lab.Targets[2].Client, osds[0].Endpoint())

	flush := make([]byte, 64)
	flush[0] = nvmeFlush
	binary.LittleEndian.PutUint32(flush[4:], 1) // the namespace
	status, err := sendCommand(ctx, lab.Targets[2].Client.Socket(), "hv", "io", flush)
	must(t, err)
	if status != 0 {
		t.Fatalf("a host's FLUSH through the target completed with %s, want success", status)
	}
}

// A flint_volume made over a raid that takes FLUSH is attached, by a
// delta resync's join, to the raid made again with a member that does
// not, an lvol: the attach succeeds, else the join leaves the volume
// paused without a base. Malloc bdevs take FLUSH; lvols take all else.
func TestAFlintVolumeTakesARaidWithoutFlushAfterOneWithIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lab := flintTgtLab(t, 1)
	c := lab.Targets[0].Client
	for _, m := range []struct {
		name   string
		blocks uint64
	}{{"m0", fvBlocks}, {"m1", fvBlocks}, {"dev", 4 * fvBlocks}} {
		_, err := c.BdevMallocCreate(ctx, types.BdevMallocCreateRequest{Name: m.name, NumBlocks: m.blocks, BlockSize: fvBlockSize})
		must(t, err)
	}
	_, err := c.BdevLvolCreateLvstore(ctx, types.BdevLvolCreateLvstoreRequest{BdevName: "dev", LvsName: "lvs"})
	must(t, err)
	lvol, err := c.BdevLvolCreate(ctx, types.BdevLvolCreateRequest{LvsName: "lvs", LvolName: "l0", SizeInMiB: fvBlocks * fvBlockSize >> 20})
	must(t, err)
	must(t, c.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: "r", RaidLevel: "raid1", BaseBdevs: []string{"m0", "m1"}}))
	must(t, c.FlintVolumeCreate(ctx, types.FlintVolumeCreateRequest{Name: "fv", BaseBdev: "r"}))

	must(t, c.FlintVolumePause(ctx, "fv"))
	must(t, c.BdevRaidDelete(ctx, "r"))
	must(t, c.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: "r", RaidLevel: "raid1", BaseBdevs: []string{"m0", lvol}}))
	if err := c.FlintVolumeAttach(ctx, types.FlintVolumeAttachRequest{Name: "fv", BaseBdev: "r"}); err != nil {
		t.Fatalf("attaching the flint_volume to a raid without FLUSH: %v", err)
	}
	must(t, c.FlintVolumeResume(ctx, "fv"))
	if info := flintVolumeInfo(ctx, t, c, "fv"); info.BaseBdev != "r" || info.Paused {
		t.Errorf("after the attach and the resume the flint_volume reads %+v, want on r and not paused", info)
	}
}
