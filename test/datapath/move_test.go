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
	"crypto/sha256"
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
	lab := spdklab.New(t, 3)
	osds := startOSDs(ctx, t, lab)
	names := []string{"osd-0", "osd-1", "osd-2"}
	// exportTo is replica i as a member of the target on OSD target,
	// exported to that target alone.
	exportTo := func(i, target int, inSync bool) storage.Member {
		m := storage.Member{OSD: names[i], InSync: inSync}
		if i != target {
			e, err := osds[i].ExportReplica(ctx, volume, agentv1.HostNQN(names[target]))
			must(t, err)
			m.Export = e
		}
		return m
	}
	first := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.Member{exportTo(0, 0, true), exportTo(1, 0, true), exportTo(2, 0, true)}}
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
	moved := storage.TargetSpec{Volume: volume, Epoch: 2, Hosts: []string{hostNQN},
		Members: []storage.Member{exportTo(1, 1, true), exportTo(2, 1, false), {OSD: "osd-0", Export: osds[0].Endpoint()}}}
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err = osds[1].EnsureTarget(ctx, moved)
		must(t, err)
		if st.Members[1].State == agentv1.MemberState_MEMBER_STATE_ONLINE {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rebuild onto OSD 2 did not finish: %+v", st)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if st.Members[0].State != agentv1.MemberState_MEMBER_STATE_ONLINE || st.Members[2].State != agentv1.MemberState_MEMBER_STATE_MISSING {
		t.Fatalf("moved target = %+v, want osd-1 and osd-2 online, osd-0 missing", st)
	}
	target = osds[1].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	dd.write(target, hostNQN, after, chunk)

	stopped, err := osds[1].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"})
	must(t, err)
	if !stopped.RaidFound || len(stopped.InSync) != 2 {
		t.Fatalf("stopped = %+v, want osd-1 and osd-2 in sync", stopped)
	}
	for _, i := range []int{1, 2} {
		e, err := osds[i].ExportReplica(ctx, volume, checker)
		must(t, err)
		got := dd.read(e, checker, volSize)
		if got == nil {
			continue // the double: no data to compare
		}
		if !bytes.Equal(got, want) {
			t.Errorf("replica on osd-%d after the move: sha256 %x, want %x", i, sha256.Sum256(got), sha256.Sum256(want))
		} else {
			t.Logf("replica on osd-%d after the move: sha256 %x (every acknowledged write)", i, sha256.Sum256(got))
		}
	}
}
