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
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// TestTargetLossMovesTheTarget: the target's SPDK is killed after the host
// wrote; the target is built again on another replica's OSD as the
// operator does it (epoch 2, its own replica the one source, the other
// rebuilt from it, the old target's replica missing), and every write the
// host saw acknowledged before the loss, and after the move, is on every
// in-sync replica. On real SPDK the host is spdk_dd and the replicas are
// checksummed; on the double the sequence of states is checked.
func TestTargetLossMovesTheTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	member := func(i, target int, inSync bool) storage.MemberSpec {
		return exportTo(ctx, t, osds, i, target, inSync, storage.Keys{})
	}
	first := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{member(0, 0, true), member(1, 0, true), member(2, 0, true)}}
	st, err := osds[0].EnsureTarget(ctx, first)
	must(t, err)
	if st.Degraded() {
		t.Fatalf("first target = %+v", st)
	}
	dd := newHost(t, lab)
	want := make([]byte, volSize)
	before, after := randomChunk(t), randomChunk(t)
	copy(want, before)
	copy(want[chunk:], after)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	dd.write(target, hostNQN, before, 0)

	// The target's SPDK dies. The new target on OSD 1 assembles from its
	// own replica; OSD 2's is exported to it alone (fencing the old
	// target) and rebuilt; OSD 0's is missing.
	lab.Targets[0].Kill()
	killed := time.Now()
	moved := storage.TargetSpec{Volume: volume, Epoch: 2, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{member(1, 1, true), member(2, 1, false), {OSD: "osd-0", Export: osds[0].Endpoint()}}}
	// The data path's share of a failover: the new target serves from
	// its own replica at once; the rebuild of OSD 2 follows.
	_, err = osds[1].EnsureTarget(ctx, moved)
	must(t, err)
	t.Logf("the new target serves %s after the old target's SPDK was killed (re-exports and raid included; the operator's decision is not)", time.Since(killed).Round(time.Millisecond))
	st = ensureUntil(ctx, t, osds[1], moved, "the rebuild onto OSD 2", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	if st.Members[0].State != agentv1.MemberState_MEMBER_STATE_ONLINE || st.Members[2].State != agentv1.MemberState_MEMBER_STATE_MISSING {
		t.Fatalf("moved target = %+v, want osd-1 and osd-2 online, osd-0 missing", st)
	}
	target = osds[1].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	began := time.Now()
	dd.write(target, hostNQN, after, chunk)
	t.Logf("a host's write through the new target, spdk_dd's start and connect included: %s", time.Since(began).Round(time.Millisecond))

	stopped, err := osds[1].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil)
	must(t, err)
	if !stopped.RaidFound || len(stopped.InSync) != 2 {
		t.Fatalf("stopped = %+v, want osd-1 and osd-2 in sync", stopped)
	}
	expectReplicas(ctx, t, dd, osds, []int{1, 2}, want)
}

// TestAMemberDroppedBeforeAPlannedMoveIsRebuilt: a member leaves the
// target's raid (as SPDK's raid1 drops one whose I/O failed) and the host
// goes on writing; then the target moves as the operator plans a move.
// Stopping the old target reports the dropped member out of sync, so the
// new target rebuilds it rather than assembling it as a copy: afterwards
// every replica holds every acknowledged write.
func TestAMemberDroppedBeforeAPlannedMoveIsRebuilt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	names := []string{"osd-0", "osd-1", "osd-2"}
	member := func(i, target int, inSync bool) storage.MemberSpec {
		return exportTo(ctx, t, osds, i, target, inSync, storage.Keys{})
	}
	dropped := member(2, 0, true)
	st, err := osds[0].EnsureTarget(ctx, storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{member(0, 0, true), member(1, 0, true), dropped}})
	must(t, err)
	if st.Degraded() {
		t.Fatalf("first target = %+v", st)
	}
	dd := newHost(t, lab)
	want := make([]byte, volSize)
	before, after := randomChunk(t), randomChunk(t)
	copy(want, before)
	copy(want[chunk:], after)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	dd.write(target, hostNQN, before, 0)

	// OSD 2's replica leaves the raid; the next write misses it.
	removeMember(ctx, t, lab.Targets[0], dropped.Export)
	dd.write(target, hostNQN, after, chunk)

	stopped, err := osds[0].DeleteTarget(ctx, volume, names, nil)
	must(t, err)
	if !stopped.RaidFound || len(stopped.InSync) != 2 || slices.Contains(stopped.InSync, "osd-2") {
		t.Fatalf("stopped = %+v, want osd-0 and osd-1 in sync and osd-2 not", stopped)
	}
	inSync := func(i int) bool { return slices.Contains(stopped.InSync, names[i]) }
	moved := storage.TargetSpec{Volume: volume, Epoch: 2, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{member(1, 1, inSync(1)), member(0, 1, inSync(0)), member(2, 1, inSync(2))}}
	ensureUntil(ctx, t, osds[1], moved, "the rebuild of the dropped member", func(st storage.Target) bool {
		return !st.Degraded() && st.Members[2].State == agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	if _, err := osds[1].DeleteTarget(ctx, volume, names, nil); err != nil {
		t.Fatal(err)
	}
	expectReplicas(ctx, t, dd, osds, []int{0, 1, 2}, want)
}

// removeMember takes the replica exported at e out of the raid on target,
// as SPDK's raid1 does with a member whose I/O failed.
func removeMember(ctx context.Context, t *testing.T, target *spdklab.Target, e storage.Subsystem) {
	t.Helper()
	ctrlrs, err := target.Client.BdevNvmeGetControllers(ctx, "")
	must(t, err)
	for _, c := range ctrlrs {
		for _, p := range c.Ctrlrs {
			if p.Trid.Subnqn == e.NQN && p.Trid.Traddr == e.Address && p.Trid.Trsvcid == strconv.Itoa(e.Port) {
				must(t, target.Client.BdevRaidRemoveBaseBdev(ctx, c.Name+"n1"))
				return
			}
		}
	}
	t.Fatalf("the target has no controller of the replica at %s:%d", e.Address, e.Port)
}
