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
	"slices"
	"testing"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Paused, a volume takes no host write, so snapshots of its replicas
// taken one after the other hold the same writes: every write
// acknowledged before the pause and none after. Resumed, writes flow
// again; pausing and resuming twice is success.
func TestAPausedTargetCutsEveryReplicaAtOneInstant(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	before, out := c.write()
	if out != spdktest.WriteAcked {
		t.Fatalf("write before the pause: %v", out)
	}
	osds := []string{m0.OSD, m1.OSD, m2.OSD}
	for range 2 {
		st, err := c.osds[0].PauseTarget(ctx, volume, osds)
		if err != nil || !st.RaidFound || !slices.Equal(st.InSync, osds) {
			t.Fatalf("PauseTarget = %+v, %v; want every member in sync", st, err)
		}
	}
	if _, out := c.write(); out != spdktest.WriteFailed {
		t.Fatalf("a host wrote to a paused volume: %v", out)
	}
	for i, o := range c.osds {
		if _, err := o.CreateSnapshot(ctx, volume, "cut"); err != nil {
			t.Fatal(err)
		}
		if w, _ := c.fabric.Writes(o.lvolAlias("cut")); !slices.Equal(w, []uint64{before}) {
			t.Errorf("snapshot on OSD %d holds writes %v, want [%d]", i, w, before)
		}
	}
	for range 2 {
		if err := c.osds[0].ResumeTarget(ctx, volume); err != nil {
			t.Fatal(err)
		}
	}
	after, out := c.write()
	if out != spdktest.WriteAcked {
		t.Fatalf("write after resuming: %v", out)
	}
	for i, o := range c.osds {
		if w, _ := c.fabric.Writes(o.lvolAlias(volume)); !slices.Contains(w, after) {
			t.Errorf("replica on OSD %d lacks the write after resuming: %v", i, w)
		}
		if w, _ := c.fabric.Writes(o.lvolAlias("cut")); slices.Contains(w, after) {
			t.Errorf("snapshot on OSD %d took a write after the cut: %v", i, w)
		}
	}
}

// A member whose connection is down holds writes that would never drain:
// the pause is refused naming it, and the volume keeps its listener. An
// OSD that does not serve the volume refuses with NotFound.
func TestPauseTargetRefusesWhatWouldNotDrain(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	osds := []string{m0.OSD, m1.OSD, m2.OSD}
	if _, err := c.osds[1].PauseTarget(ctx, volume, osds); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PauseTarget on an OSD that does not serve the volume = %v, want NotFound", err)
	}
	if err := c.osds[1].ResumeTarget(ctx, volume); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ResumeTarget on an OSD that does not serve the volume = %v, want NotFound", err)
	}
	c.targets[2].Kill()
	if _, out := c.write(); out != spdktest.WriteHeld {
		t.Fatalf("write with a member down: %v, want held", out)
	}
	if _, err := c.osds[0].PauseTarget(ctx, volume, osds); !errorsAsHeld(err, m2.OSD) {
		t.Fatalf("PauseTarget with a member holding writes = %v, want MembersHeld naming %s", err, m2.OSD)
	}
	// The drain itself would wait for the held write as long as it is
	// held; the double says it does not model that wait.
	err := c.spdks[0].NvmfSubsystemSetNsAnaGroup(ctx, types.NvmfNsAnaGroupRequest{NQN: agentv1.VolumeNQN(volume), NSID: 1, AnaGrpID: 1})
	if jsonrpc.CodeOf(err) != spdktest.CodeNotModeled {
		t.Fatalf("the drain with a write held = %v, want the double's refusal (%d)", err, spdktest.CodeNotModeled)
	}
	subs, err := c.spdks[0].NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil || len(subs[0].ListenAddresses) != 1 {
		t.Fatalf("after the refused pause the volume listens on %+v, %v; want its listener", subs, err)
	}
}

// A volume of one replica is its lvol, exported: paused, its one replica
// is in sync.
func TestPauseTargetOfASingleReplica(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1)
	c.createReplicas(64 << 20)
	m0 := c.exportReplica(0, true)
	c.ensure(m0)
	st, err := c.osds[0].PauseTarget(ctx, volume, []string{m0.OSD})
	if err != nil || st.RaidFound || !slices.Equal(st.InSync, []string{m0.OSD}) {
		t.Fatalf("PauseTarget = %+v, %v; want the one replica in sync", st, err)
	}
	if _, out := c.write(); out != spdktest.WriteFailed {
		t.Fatalf("a host wrote to a paused volume: %v", out)
	}
	if err := c.osds[0].ResumeTarget(ctx, volume); err != nil {
		t.Fatal(err)
	}
	if _, out := c.write(); out != spdktest.WriteAcked {
		t.Fatalf("write after resuming: %v", out)
	}
}

// A pause keeps the volume's listener, and so its hosts' connections: it
// turns the listener ANA inaccessible. The next EnsureTarget lets the
// hosts back in, also from an agent that restarted in between and so
// does not know it paused.
func TestAPauseKeepsTheListenerUntilEnsured(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	nqn := agentv1.VolumeNQN(volume)
	state := func() (listeners int, ana string) {
		t.Helper()
		subs, err := c.spdks[0].NvmfGetSubsystems(ctx, nqn)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := c.spdks[0].NvmfSubsystemGetListeners(ctx, nqn)
		if err != nil || len(ls) != 1 || len(ls[0].AnaStates) == 0 {
			t.Fatalf("listeners of the volume = %+v, %v; want one, reporting ANA", ls, err)
		}
		return len(subs[0].ListenAddresses), ls[0].AnaStates[0].AnaState
	}
	osds := []string{m0.OSD, m1.OSD, m2.OSD}
	for _, ensure := range []struct {
		name   string
		engine func() *Engine
	}{
		{"by the agent that paused", func() *Engine { return c.osds[0] }},
		{"by a restarted agent", func() *Engine { return New(c.osds[0].cfg, c.spdks[0]) }},
	} {
		if _, err := c.osds[0].PauseTarget(ctx, volume, osds); err != nil {
			t.Fatal(err)
		}
		if n, ana := state(); n != 1 || ana != "inaccessible" {
			t.Fatalf("paused, the volume has %d listeners, ANA %s; want its listener, inaccessible", n, ana)
		}
		if _, out := c.write(); out != spdktest.WriteFailed {
			t.Fatalf("a host wrote to a paused volume: %v", out)
		}
		if _, err := ensure.engine().EnsureTarget(ctx, TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{publishedHost}, Members: []MemberSpec{m0, m1, m2}}); err != nil {
			t.Fatal(err)
		}
		if _, ana := state(); ana != "optimized" {
			t.Fatalf("ensured %s, the listener is ANA %s, want optimized", ensure.name, ana)
		}
		if _, out := c.write(); out != spdktest.WriteAcked {
			t.Fatalf("write after the target was ensured %s: %v", ensure.name, out)
		}
	}
}

// A volume subsystem created without ANA reporting, by an agent from
// before it, keeps being paused the old way: its listener goes, and
// comes back on the resume.
func TestAPauseOfASubsystemWithoutANARemovesItsListener(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	nqn, spdk := agentv1.VolumeNQN(volume), c.spdks[0]
	sub, err := spdk.NvmfGetSubsystems(ctx, nqn)
	if err != nil {
		t.Fatal(err)
	}
	id := agentv1.VolumeIdentity(volume)
	if err := spdk.NvmfDeleteSubsystem(ctx, nqn); err != nil {
		t.Fatal(err)
	}
	if err := spdk.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: id.Serial, MinCntlid: sub[0].MinCntlid, MaxCntlid: sub[0].MaxCntlid}); err != nil {
		t.Fatal(err)
	}
	if _, err := spdk.NvmfSubsystemAddNs(ctx, nqn, types.NvmfNamespaceRequest{BdevName: raidName(volume), NSID: 1, UUID: id.UUID, NGUID: id.NGUID, EUI64: id.EUI64}); err != nil {
		t.Fatal(err)
	}
	c.ensure(m0, m1, m2)
	if _, out := c.write(); out != spdktest.WriteAcked {
		t.Fatalf("write through the subsystem without ANA: %v", out)
	}
	if _, err := c.osds[0].PauseTarget(ctx, volume, []string{m0.OSD, m1.OSD, m2.OSD}); err != nil {
		t.Fatal(err)
	}
	if subs, err := spdk.NvmfGetSubsystems(ctx, nqn); err != nil || len(subs[0].ListenAddresses) != 0 {
		t.Fatalf("paused, the subsystem without ANA listens on %+v, %v; want no listener", subs, err)
	}
	if err := c.osds[0].ResumeTarget(ctx, volume); err != nil {
		t.Fatal(err)
	}
	if _, out := c.write(); out != spdktest.WriteAcked {
		t.Fatalf("write after resuming: %v", out)
	}
}

// ResumeTarget reads the listener's state even where the agent remembers
// it accessible: an EnsureTarget that read it just before a pause began
// may have remembered it so.
func TestAResumeDoesNotTrustWhatItRemembers(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	e := c.osds[0]
	if _, err := e.PauseTarget(ctx, volume, []string{m0.OSD, m1.OSD, m2.OSD}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.accessible[agentv1.VolumeNQN(volume)] = true // what the overtaken read left
	e.mu.Unlock()
	if err := e.ResumeTarget(ctx, volume); err != nil {
		t.Fatal(err)
	}
	if _, out := c.write(); out != spdktest.WriteAcked {
		t.Fatalf("write after resuming: %v", out)
	}
}
