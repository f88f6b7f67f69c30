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

package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// Delta resync (docs/volumes.md, "Resync"). On flint_tgt a target's
// namespace sits on a flint_volume over its raid. A remote member that
// letGo lets go is marked there first, so the flint_volume records the
// blocks of every write from then on. When the member comes back with the
// same replica, the marked blocks are copied to it in rounds while hosts
// write; the last round runs with the volume paused, and the raid is made
// again with the member in it. A member with no usable map (the target
// restarted or moved, the replica is another, the volume grew meanwhile,
// a copy failed) is rebuilt whole by the raid, as on nvmf_tgt.

// finalRoundBlocks is the most a member's map may hold for the last round
// of its delta resync, which hosts wait out paused: 4 MiB of 4 KiB blocks,
// milliseconds of copy.
const finalRoundBlocks = 1024

// copyPoll is how often the join waits on its last round's copy.
const copyPoll = 5 * time.Millisecond

// joinPause bounds how long hosts wait on a join's pause: to drain what
// is in flight, then the last round's copy, each. Either takes
// milliseconds unless a member went silent meanwhile; the join then gives
// up and lets the hosts go on.
const joinPause = 2 * time.Second

// joinBound bounds a whole join: its pause's two waits and the raid made
// again, which take milliseconds.
const joinBound = 10 * time.Second

// memberKey names a member's map: its OSD and the uuid of its replica's
// bdev as the target sees it (the lvol's), so that a replica made anew on
// the same OSD, empty, is never caught up from a map of the old one.
func memberKey(osd, uuid string) string { return osd + "/" + uuid }

// volumeBdevInfo reads the volume's flint_volume; found is false when the
// target exports its raid.
func (e *Engine) volumeBdevInfo(ctx context.Context, volume string) (info types.FlintVolumeInfo, found bool, err error) {
	bdevs, err := e.spdk.BdevGetBdevs(ctx, volumeBdevName(volume))
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return types.FlintVolumeInfo{}, false, nil
	}
	if err != nil {
		return types.FlintVolumeInfo{}, false, fmt.Errorf("read flint_volume of %s: %w", volume, err)
	}
	if len(bdevs) != 1 || bdevs[0].DriverSpecific.FlintVolume == nil {
		return types.FlintVolumeInfo{}, false, fmt.Errorf("%w: bdev %s is no flint_volume", ErrConflict, volumeBdevName(volume))
	}
	return *bdevs[0].DriverSpecific.FlintVolume, true, nil
}

// replicaUUID is the uuid of a remote replica's bdev; "" when it has none
// to read.
func (e *Engine) replicaUUID(ctx context.Context, bdev string) (string, error) {
	bdevs, err := e.spdk.BdevGetBdevs(ctx, bdev)
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read bdev %s: %w", bdev, err)
	}
	return bdevs[0].UUID, nil
}

// markBeforeLetGo starts the map of the member whose replica is bdev,
// when the target has a flint_volume, the spec keeps the member (not
// leaving), and the member is in raid r, configured and not being
// rebuilt: only then does it hold every write acknowledged so far, so
// that the blocks written from here on are all it misses. The writes held
// for it are still in flight through the flint_volume, and the mark covers
// them too. Anything else gets no map and is rebuilt whole, and so does a
// member whose mark fails: the map only ever saves a copy, so its absence
// never holds the let-go up.
func (e *Engine) markBeforeLetGo(ctx context.Context, spec TargetSpec, bdev string) {
	i := slices.IndexFunc(spec.Members, func(m MemberSpec) bool {
		return m.OSD != e.cfg.UID && !m.Leaving && remoteBdev(spec.Volume, m.OSD) == bdev
	})
	if i < 0 || !e.holdsEveryWrite(ctx, spec.Volume, bdev) {
		return
	}
	if _, found, err := e.volumeBdevInfo(ctx, spec.Volume); err != nil || !found {
		return
	}
	uuid, err := e.replicaUUID(ctx, bdev)
	if err != nil || uuid == "" {
		return // no identity to key a map by
	}
	fv, key := volumeBdevName(spec.Volume), memberKey(spec.Members[i].OSD, uuid)
	if e.spdk.FlintVolumeMark(ctx, fv, key) != nil {
		return
	}
	// SPDK's raid1 drops a member on a failed write on its own: one
	// dropped before the mark answered may lack a write the map missed.
	if !e.holdsEveryWrite(ctx, spec.Volume, bdev) {
		_ = e.spdk.FlintVolumeForget(ctx, fv, key)
	}
}

// holdsEveryWrite says whether bdev is a configured member of the volume's
// raid, as read now, and not being rebuilt: it took every write the raid
// acknowledged.
func (e *Engine) holdsEveryWrite(ctx context.Context, volume, bdev string) bool {
	r, err := e.raid(ctx, raidName(volume))
	return err == nil && slices.Contains(r.Members(), bdev) && !rebuilding(r, bdev)
}

// resync brings back the spec's reachable members that are not in raid r,
// one at a time: by their maps where they have one, else by the raid's
// rebuild (startNextRebuild). blocks is the size of the volume's replicas.
// It returns how far each delta copy got, by member OSD, in percent.
func (e *Engine) resync(ctx context.Context, spec TargetSpec, r types.RaidBdev, bdevs map[string]string, held map[string]heldBdev, blocks uint64) (map[string]int32, error) {
	info, found, err := e.volumeBdevInfo(ctx, spec.Volume)
	if err != nil {
		return nil, err
	}
	if !found || len(info.Maps) == 0 {
		return nil, e.startNextRebuild(ctx, spec, r, bdevs)
	}
	keys, err := e.memberKeys(ctx, spec, bdevs)
	if err != nil {
		return nil, err
	}
	if err := e.forgetStaleMaps(ctx, spec, info, keys); err != nil {
		return nil, err
	}
	fv := volumeBdevName(spec.Volume)
	// Each map read once. A join makes the raid again, which stops every
	// copy from it: it waits for them all to end.
	states := map[string]types.FlintVolumeDirty{}
	copying := false
	for _, mp := range info.Maps {
		st, err := e.spdk.FlintVolumeGetDirty(ctx, types.FlintVolumeGetDirtyRequest{Name: fv, Member: mp.Member, MaxRanges: 1})
		if errors.Is(err, jsonrpc.ErrNotFound) {
			continue // forgotten as stale just now
		}
		if err != nil {
			return nil, fmt.Errorf("read the map %s: %w", mp.Member, err)
		}
		states[mp.Member] = st
		copying = copying || st.Copying
	}
	progress := map[string]int32{}
	for _, m := range spec.Members {
		b, ok := bdevs[m.OSD]
		st, mapped := states[keys[m.OSD]]
		if !ok || m.WaitRebuild || slices.Contains(r.Members(), b) || !mapped {
			continue
		}
		switch {
		case st.Grown || st.CopyError != "":
			// Unusable: the member is rebuilt whole below.
			if err := e.spdk.FlintVolumeForget(ctx, fv, keys[m.OSD]); err != nil {
				return nil, fmt.Errorf("forget the map of OSD %s: %w", m.OSD, err)
			}
			continue
		case !copying && st.DirtyBlocks <= finalRoundBlocks && r.Process == nil && len(held) == 0:
			// Joined: the next call goes on with the others.
			return nil, e.joinAfterDelta(ctx, spec, bdevs, m.OSD, keys[m.OSD], blocks)
		case !st.Copying && st.DirtyBlocks > 0:
			req := types.FlintVolumeCopyRequest{Name: fv, Member: keys[m.OSD], MemberBdev: b, MaxMiBPerSec: uint64(spec.RebuildMaxMiBPerSec)}
			if err := e.spdk.FlintVolumeCopy(ctx, req); err != nil {
				return nil, fmt.Errorf("copy to OSD %s what it missed: %w", m.OSD, err)
			}
		}
		progress[m.OSD] = copiedPercent(st)
		// One at a time, as the raid rebuilds.
		return progress, nil
	}
	return progress, e.startNextRebuild(ctx, spec, r, bdevs)
}

// copiedPercent is how far a delta resync got: under 100 until it joined.
func copiedPercent(st types.FlintVolumeDirty) int32 {
	total := st.CopiedBlocks + st.DirtyBlocks
	if total == 0 {
		return 99
	}
	return int32(min(99, st.CopiedBlocks*100/total))
}

// memberKeys are the keys of the maps of the spec's remote members that
// are attached (bdevs), by OSD.
func (e *Engine) memberKeys(ctx context.Context, spec TargetSpec, bdevs map[string]string) (map[string]string, error) {
	keys := map[string]string{}
	for _, m := range spec.Members {
		b, ok := bdevs[m.OSD]
		if !ok || m.OSD == e.cfg.UID {
			continue
		}
		uuid, err := e.replicaUUID(ctx, b)
		if err != nil {
			return nil, err
		}
		if uuid != "" {
			keys[m.OSD] = memberKey(m.OSD, uuid)
		}
	}
	return keys, nil
}

// forgetStaleMaps drops the maps no member can use: of an OSD the spec no
// longer lists, or made for another replica than the one attached now.
func (e *Engine) forgetStaleMaps(ctx context.Context, spec TargetSpec, info types.FlintVolumeInfo, keys map[string]string) error {
	for _, mp := range info.Maps {
		osd, _, _ := strings.Cut(mp.Member, "/")
		listed := slices.ContainsFunc(spec.Members, func(m MemberSpec) bool { return m.OSD == osd && !m.Leaving })
		if key, attached := keys[osd]; listed && (!attached || key == mp.Member) {
			continue
		}
		// A map being copied from is forgotten once its copy ends.
		if err := e.spdk.FlintVolumeForget(ctx, volumeBdevName(spec.Volume), mp.Member); err != nil && jsonrpc.CodeOf(err) != jsonrpc.CodeBusy {
			return fmt.Errorf("forget the map %s: %w", mp.Member, err)
		}
	}
	return nil
}

// joinAfterDelta runs the last round of osd's delta resync and puts its
// replica back in the raid: with the volume paused (no host write in
// flight or admitted) the map's last blocks are copied, so the replica
// then equals the raid block for block, and the raid is made again with
// it, online at once (no superblock, no rebuild), from the members the
// raid has once paused (none is dropped while nothing is written). It
// runs on a context of its own, bounded by joinBound, so its caller's
// deadline cannot cut it between the raid's deletion and its making. An
// error before the deletion resumes the volume; one after leaves it
// paused without its raid: the next resuming call finds the target lost,
// and the operator's re-assembly gets the flint_volume attached and
// resumed (restoreVolumeBdev).
func (e *Engine) joinAfterDelta(ctx context.Context, spec TargetSpec, bdevs map[string]string, osd, key string, blocks uint64) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), joinBound)
	defer cancel()
	fv := volumeBdevName(spec.Volume)
	pauseCtx, cancelPause := context.WithTimeout(ctx, joinPause)
	defer cancelPause()
	if err := e.spdk.FlintVolumePause(pauseCtx, fv); err != nil {
		// A pause that did not drain in time completes later: the next
		// call resumes it (restoreVolumeBdev).
		return fmt.Errorf("pause %s for the last round of OSD %s's resync: %w", fv, osd, err)
	}
	raidDeleted := false
	defer func() {
		if err != nil && !raidDeleted {
			// The hosts go on; the member's copy goes on next round.
			err = errors.Join(err, e.spdk.FlintVolumeResume(ctx, fv))
		}
	}()
	r, err := e.raid(ctx, raidName(spec.Volume))
	if err != nil {
		return err
	}
	if r.Process != nil {
		return fmt.Errorf("the raid of %s started a rebuild before OSD %s's join: tried again", spec.Volume, osd)
	}
	if err := e.spdk.FlintVolumeCopy(ctx, types.FlintVolumeCopyRequest{Name: fv, Member: key, MemberBdev: bdevs[osd]}); err != nil {
		return fmt.Errorf("copy to OSD %s the last of what it missed: %w", osd, err)
	}
	deadline := time.Now().Add(joinPause)
	for {
		st, err := e.spdk.FlintVolumeGetDirty(ctx, types.FlintVolumeGetDirtyRequest{Name: fv, Member: key, MaxRanges: 1})
		if err != nil {
			return fmt.Errorf("read the map of OSD %s: %w", osd, err)
		}
		if st.CopyError != "" {
			return fmt.Errorf("copy to OSD %s the last of what it missed: %s", osd, st.CopyError)
		}
		if !st.Copying && st.DirtyBlocks == 0 {
			break
		}
		if !st.Copying {
			return fmt.Errorf("the map of OSD %s holds %d blocks after its last round, with the volume paused", osd, st.DirtyBlocks)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the last round of OSD %s's resync ran over %v: the hosts go on, and it is tried again", osd, joinPause)
		}
		time.Sleep(copyPoll)
	}
	slots := make([]string, len(spec.Members))
	for i, m := range e.localFirst(spec.Members) {
		if b, ok := bdevs[m.OSD]; ok && (m.OSD == osd || slices.Contains(r.Members(), b)) {
			slots[i] = b
		}
	}
	raidDeleted = true
	if err := e.spdk.BdevRaidDelete(ctx, r.Name); err != nil {
		return fmt.Errorf("delete raid %s to make it again with OSD %s: %w", r.Name, osd, err)
	}
	if err := e.createRaid(ctx, spec.Volume, slots, blocks); err != nil {
		return err
	}
	if err := e.spdk.FlintVolumeAttach(ctx, types.FlintVolumeAttachRequest{Name: fv, BaseBdev: r.Name}); err != nil {
		return fmt.Errorf("attach %s to the raid made again: %w", fv, err)
	}
	if err := e.spdk.FlintVolumeResume(ctx, fv); err != nil {
		return fmt.Errorf("resume %s: %w", fv, err)
	}
	if err := e.spdk.FlintVolumeForget(ctx, fv, key); err != nil {
		return fmt.Errorf("forget the map of OSD %s, in sync again: %w", osd, err)
	}
	return nil
}
