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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const (
	publishedHost = "nqn.2014-08.org.nvmexpress:uuid:1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"
	volume        = "5d0c1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
)

// cluster is OSDs, each with its own SPDK double, on one fabric.
type cluster struct {
	t       *testing.T
	clock   *spdktest.FakeClock
	fabric  *spdktest.Fabric
	targets []*spdktest.Target
	osds    []*Engine
	spdks   []*client.Client
}

func newCluster(t *testing.T, n int) *cluster {
	dir, err := os.MkdirTemp("", "flint-osds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &cluster{t: t, clock: spdktest.NewFakeClock()}
	fabric := spdktest.NewFabric(spdktest.WithClock(c.clock), spdktest.WithRebuildRate(4096))
	c.fabric = fabric
	for i := range n {
		tg, err := fabric.StartTarget(filepath.Join(dir, fmt.Sprintf("osd%d.sock", i)))
		if err != nil {
			t.Fatal(err)
		}
		dev := filepath.Join(dir, fmt.Sprintf("osd%d.img", i))
		if err := os.WriteFile(dev, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(dev, gib); err != nil {
			t.Fatal(err)
		}
		spdk := client.New(tg.Socket())
		t.Cleanup(func() { _ = spdk.Close(); tg.Kill() })
		c.targets = append(c.targets, tg)
		c.spdks = append(c.spdks, spdk)
		keyDir := filepath.Join(dir, fmt.Sprintf("keys%d", i))
		if err := os.Mkdir(keyDir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.osds = append(c.osds, New(Config{
			UID:      fmt.Sprintf("osd-%d", i),
			KeyDir:   keyDir,
			Device:   Device{Driver: DriverAIO, Path: dev},
			Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4421 + i},
		}, spdk))
		c.bootstrap(i)
	}
	return c
}

// createReplicas makes a replica of the volume on every OSD.
func (c *cluster) createReplicas(size uint64) {
	c.t.Helper()
	for _, o := range c.osds {
		if _, err := o.CreateReplica(context.Background(), volume, size); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *cluster) bootstrap(i int) {
	c.t.Helper()
	if _, err := c.osds[i].Bootstrap(context.Background()); err != nil {
		c.t.Fatal(err)
	}
}

// exportReplica (re-)exports OSD i's replica of the volume to OSD 0, the
// target, and returns the member for the target spec.
func (c *cluster) exportReplica(i int, inSync bool) MemberSpec {
	c.t.Helper()
	m := MemberSpec{OSD: c.osds[i].cfg.UID, InSync: inSync}
	if i == 0 {
		return m
	}
	exp, err := c.osds[i].ExportReplica(context.Background(), volume, agentv1.HostNQN(c.osds[0].cfg.UID), 1, Keys{})
	if err != nil {
		c.t.Fatal(err)
	}
	m.Export = exp
	return m
}

// write is a host's write to the volume through OSD 0's target.
func (c *cluster) write() (uint64, spdktest.WriteOutcome) {
	return c.fabric.Write("127.0.0.1", 4421, agentv1.VolumeNQN(volume), publishedHost)
}

func errorsAsHeld(err error, osd string) bool {
	var held *MembersHeldError
	return errors.As(err, &held) && slices.Equal(held.OSDs, []string{osd})
}

func (c *cluster) ensure(members ...MemberSpec) Target {
	c.t.Helper()
	return c.ensureSpec(TargetSpec{Members: members})
}

// ensureSpec ensures the target of spec's members and settings, as
// volume's, published to publishedHost.
func (c *cluster) ensureSpec(spec TargetSpec) Target {
	c.t.Helper()
	spec.Volume, spec.Epoch, spec.Hosts = volume, 1, []string{publishedHost}
	st, err := c.osds[0].EnsureTarget(context.Background(), spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// threeReplicas is a cluster of three OSDs, each with a 64 MiB replica of
// volume exported to OSD 0, and those replicas as in-sync members.
func threeReplicas(t *testing.T) (c *cluster, m0, m1, m2 MemberSpec) {
	t.Helper()
	c = newCluster(t, 3)
	c.createReplicas(64 << 20)
	return c, c.exportReplica(0, true), c.exportReplica(1, true), c.exportReplica(2, true)
}

func states(st Target) []agentv1.MemberState {
	var s []agentv1.MemberState
	for _, m := range st.Members {
		s = append(s, m.State)
	}
	return s
}

func wantStates(t *testing.T, st Target, want ...agentv1.MemberState) {
	t.Helper()
	if got := states(st); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("member states = %v, want %v", got, want)
	}
}

func TestThreeOSDsLoseAndRebuildAReplica(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)

	st := c.ensure(m0, m1, m2)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	if st.Degraded() || st.Export.NQN != agentv1.VolumeNQN(volume) || st.Export.Port != 4421 {
		t.Fatalf("target status = %+v", st)
	}
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	sub, err := c.spdks[0].NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil || len(sub[0].HostNQNs()) != 1 || sub[0].HostNQNs()[0] != publishedHost {
		t.Fatalf("volume subsystem = %+v, %v", sub, err)
	}
	wantIdentity(t, c.spdks[0], 1)

	// OSD 2's SPDK dies. Its controller retries for ever and the raid
	// waits for it: a host's write is held, not acknowledged without it,
	// for as long as the caller counts it in sync.
	c.targets[2].Kill()
	seq, out := c.write()
	c.clock.Advance(time.Hour)
	st = c.ensure(m0, m1, m2)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_HELD)
	if !st.Degraded() {
		t.Error("a target with a member that holds writes must be degraded")
	}
	if why := st.Members[2].HeldReason; !strings.Contains(why, "connection") {
		t.Errorf("the held member's reason = %q, want its lost connection named", why)
	}
	if out != spdktest.WriteHeld || c.fabric.Outcome(seq) != spdktest.WriteHeld {
		t.Fatalf("a write while a member is lost: %v, now %v; want held", out, c.fabric.Outcome(seq))
	}
	if degraded, err := c.osds[0].DegradedTargets(ctx); err != nil || !slices.Equal(degraded, []string{volume}) {
		t.Fatalf("degraded targets = %v, %v; want the volume, for the operator to record the member out of sync", degraded, err)
	}
	if _, err := c.osds[0].DeleteTarget(ctx, volume, []string{m0.OSD, m1.OSD, m2.OSD}, nil); !errorsAsHeld(err, m2.OSD) {
		t.Fatalf("stopping the target while a member holds writes: %v, want it refused naming %s", err, m2.OSD)
	}
	// Recorded out of sync, it leaves: the others acknowledge the write.
	m2.InSync = false
	st = c.ensure(m0, m1, m2)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING)
	if out := c.fabric.Outcome(seq); out != spdktest.WriteAcked {
		t.Fatalf("the held write once the member left: %v, want acknowledged", out)
	}

	// It comes back with its lvol on its disk; it missed writes, so it is
	// no longer in sync and is rebuilt.
	if err := c.targets[2].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(2)
	m2 = c.exportReplica(2, false)
	st = c.ensure(m0, m1, m2)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
	c.clock.Advance(2 * time.Second) // 8192 of 16384 blocks
	st = c.ensure(m0, m1, m2)
	if st.Members[2].State != agentv1.MemberState_MEMBER_STATE_REBUILDING || st.Members[2].RebuildPercent != 50 {
		t.Fatalf("rebuild = %+v, want 50%%", st.Members[2])
	}
	inv, err := c.osds[0].Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := TargetSummary{Volume: volume, State: "online", Members: 3, Online: 2, RebuildPercent: 50}
	if len(inv.Replicas) != 1 || inv.Replicas[0].Volume != volume || len(inv.Targets) != 1 || inv.Targets[0] != want {
		t.Fatalf("inventory during the rebuild = %+v, want its replica and target %+v", inv, want)
	}
	c.clock.Advance(2 * time.Second)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)

	// Teardown: target first, then replicas, all idempotent.
	uids := []string{m0.OSD, m1.OSD, m2.OSD}
	if err := c.osds[0].DeleteReplica(ctx, volume); !errors.Is(err, ErrInUse) {
		t.Errorf("deleting the target's own replica before the target: %v, want ErrInUse", err)
	}
	for range 2 {
		if _, err := c.osds[0].DeleteTarget(ctx, volume, uids, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range c.osds {
		if err := o.DeleteReplica(ctx, volume); err != nil {
			t.Fatal(err)
		}
	}
	if raids, _ := c.spdks[0].BdevRaidGetBdevs(ctx, types.RaidCategoryAll); len(raids) != 0 {
		t.Errorf("raids after teardown: %+v", raids)
	}
	for i, spdk := range c.spdks {
		if lvols, _ := spdk.BdevLvolGetLvols(ctx, types.BdevLvolGetLvolsRequest{}); len(lvols) != 0 {
			t.Errorf("OSD %d keeps lvols after teardown: %+v", i, lvols)
		}
	}
}

// A member whose connection drops holds writes and reconnects by itself
// only to the lvol it had: one that comes back from its disk takes the
// held writes and stays in sync. A replica made anew (its device was
// replaced) is exported under another NQN, so the held controller never
// takes it for the old one; recorded out of sync, the old member leaves
// and the new replica is rebuilt.
func TestALostMemberReconnectsOnlyToItsOwnLvol(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)

	c.targets[2].Kill()
	seq, _ := c.write()
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_HELD)
	if err := c.targets[2].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(2)
	if again := c.exportReplica(2, true); again.Export != m2.Export {
		t.Fatalf("the replica back from its disk is exported as %+v, was %+v", again.Export, m2.Export)
	}
	c.clock.Advance(reconnectDelaySec * time.Second)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	if writes, _ := c.fabric.Writes(c.osds[2].lvolAlias(volume)); c.fabric.Outcome(seq) != spdktest.WriteAcked || !slices.Contains(writes, seq) {
		t.Fatalf("the held write: %v, on the member that came back: %v", c.fabric.Outcome(seq), writes)
	}

	// Its replica is made anew, empty: a new lvol, a new NQN.
	c.targets[2].Kill()
	seq, _ = c.write()
	if err := c.targets[2].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(2)
	if err := c.osds[2].DeleteReplica(ctx, volume); err != nil {
		t.Fatal(err)
	}
	if _, err := c.osds[2].CreateReplica(ctx, volume, 64<<20); err != nil {
		t.Fatal(err)
	}
	fresh := c.exportReplica(2, true)
	if fresh.Export.NQN == m2.Export.NQN {
		t.Fatalf("a new lvol is exported under the old one's NQN %s", fresh.Export.NQN)
	}
	c.clock.Advance(time.Hour)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_HELD)
	if writes, _ := c.fabric.Writes(c.osds[2].lvolAlias(volume)); slices.Contains(writes, seq) || c.fabric.Outcome(seq) != spdktest.WriteHeld {
		t.Fatalf("the new lvol took the held write (%v), or it settled (%v)", writes, c.fabric.Outcome(seq))
	}
	fresh.InSync = false
	wantStates(t, c.ensure(m0, m1, fresh), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING)
	wantStates(t, c.ensure(m0, m1, fresh), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
}

func TestThreeOSDsReplaceALostReplica(t *testing.T) {
	c := newCluster(t, 4)
	c.createReplicas(64 << 20)
	m0, m1, m2 := c.exportReplica(0, true), c.exportReplica(1, true), c.exportReplica(2, true)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)

	c.targets[2].Kill()
	if st := c.ensure(m0, m1, m2); !st.Degraded() {
		t.Fatalf("target after losing a replica = %+v, want degraded", st)
	}

	m3 := c.exportReplica(3, false)
	wantStates(t, c.ensure(m0, m1, m3), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
	c.clock.Advance(2 * time.Second)
	if st := c.ensure(m0, m1, m3); st.Members[2].RebuildPercent != 50 {
		t.Fatalf("replacement = %+v, want rebuilt 50%%", st.Members[2])
	}
	c.clock.Advance(2 * time.Second)
	st := c.ensure(m0, m1, m3)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	if st.Degraded() {
		t.Errorf("target with its replacement rebuilt is still degraded: %+v", st)
	}
}

// After the target's own SPDK restarts, the target is re-driven from the
// members' state alone; an in-sync member that cannot be reached keeps an
// empty slot and is rebuilt when it returns.
func TestThreeOSDsReDriveAfterTargetRestart(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)

	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.targets[1].Kill()
	c.bootstrap(0)
	st := c.ensure(m0, m1, m2)
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING, agentv1.MemberState_MEMBER_STATE_ONLINE)
	r, err := c.osds[0].raid(ctx, raidName(volume))
	if err != nil || r.NumBaseBdevs != 3 || r.NumBaseBdevsOperational != 2 {
		t.Fatalf("re-driven raid = %+v, %v; want 3 slots, one empty", r, err)
	}
	if b, err := c.spdks[0].BdevGetBdevs(ctx, placeholderName(volume, 1)); err == nil {
		t.Fatalf("placeholder left behind: %+v", b)
	}

	if err := c.targets[1].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(1)
	m1 = c.exportReplica(1, false)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING, agentv1.MemberState_MEMBER_STATE_ONLINE)
	c.clock.Advance(5 * time.Second)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
}

func TestEnsureTargetRefusesBadSpecs(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 3)
	if _, err := c.osds[0].CreateReplica(ctx, volume, 64<<20); err != nil {
		t.Fatal(err)
	}
	local := MemberSpec{OSD: "osd-0", InSync: true}
	tests := []struct {
		name    string
		spec    TargetSpec
		wantErr error
	}{
		{"no local replica", TargetSpec{Volume: volume, Epoch: 1, Members: []MemberSpec{{OSD: "osd-1", InSync: true}}}, ErrInvalid},
		{"no in-sync replica and no raid", TargetSpec{Volume: volume, Epoch: 1, Members: []MemberSpec{{OSD: "osd-0"}, {OSD: "osd-1", Export: c.osds[1].Endpoint()}}}, ErrNotFound},
		{"a member twice", TargetSpec{Volume: volume, Epoch: 1, Members: []MemberSpec{local, local}}, ErrInvalid},
		{"bad volume name", TargetSpec{Volume: "Bad_Name", Epoch: 1, Members: []MemberSpec{local}}, ErrInvalid},
		{"no epoch", TargetSpec{Volume: volume, Members: []MemberSpec{local}}, ErrInvalid},
		{"no local lvol", TargetSpec{Volume: "0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e", Epoch: 1, Members: []MemberSpec{{OSD: "osd-0", InSync: true}}}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.osds[0].EnsureTarget(ctx, tt.spec); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// Draining a healthy replica: the spec lists its replacement instead; the
// target takes the old one out of the raid (detaching it), which frees the
// slot the replacement is rebuilt into.
func TestThreeOSDsMoveAHealthyReplica(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 4)
	c.createReplicas(64 << 20)
	m0, m1, m2 := c.exportReplica(0, true), c.exportReplica(1, true), c.exportReplica(2, true)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)

	m3 := c.exportReplica(3, false)
	wantStates(t, c.ensure(m0, m1, m3), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
	if _, err := c.spdks[0].BdevNvmeGetControllers(ctx, remoteName(volume, c.osds[2].cfg.UID)); err == nil {
		t.Errorf("the moved replica's controller is still attached")
	}
	r, err := c.osds[0].raid(ctx, raidName(volume))
	if err != nil || r.NumBaseBdevs != 3 {
		t.Fatalf("raid = %+v, %v; want 3 slots", r, err)
	}
	c.clock.Advance(5 * time.Second)
	wantStates(t, c.ensure(m0, m1, m3), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
}

// A replica whose OSD is about to stop leaves the raid before it goes: its
// controller is detached, its slot kept, and a write is acknowledged by
// the others at once; back, it is rebuilt into the slot it left.
func TestALeavingMemberKeepsItsSlot(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)

	leaving := MemberSpec{OSD: m2.OSD, Leaving: true}
	wantStates(t, c.ensure(m0, m1, leaving), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING)
	if _, err := c.spdks[0].BdevNvmeGetControllers(ctx, remoteName(volume, m2.OSD)); err == nil {
		t.Error("the leaving replica's controller is still attached")
	}
	r, err := c.osds[0].raid(ctx, raidName(volume))
	if err != nil || r.NumBaseBdevs != 3 || len(r.Members()) != 2 {
		t.Fatalf("raid = %+v, %v; want 3 slots, 2 members", r, err)
	}
	if _, out := c.write(); out != spdktest.WriteAcked {
		t.Fatalf("a write once the replica left: %s, want acknowledged at once", out)
	}
	// Told again while it leaves, the target attaches it no more.
	wantStates(t, c.ensure(m0, m1, MemberSpec{OSD: m2.OSD, Export: m2.Export, Leaving: true}), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING)

	back := c.exportReplica(2, false)
	wantStates(t, c.ensure(m0, m1, back), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
	c.clock.Advance(5 * time.Second)
	wantStates(t, c.ensure(m0, m1, back), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
}

// A replica back from its OSD's stop waits, attached but out of the raid,
// while its rebuild waits for a slot; once let in, its rebuild keeps the
// bandwidth cap it started with: 64 MiB at 1 MiB/s, where the double's
// rebuilds otherwise copy 16 MiB/s.
func TestARebuildWaitsForItsSlotAndKeepsItsCap(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	c.ensure(m0, m1, MemberSpec{OSD: m2.OSD, Leaving: true})

	back := c.exportReplica(2, false)
	back.WaitRebuild = true
	wantStates(t, c.ensure(m0, m1, back), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_PENDING)
	if r, err := c.osds[0].raid(ctx, raidName(volume)); err != nil || r.Process != nil || len(r.Members()) != 2 {
		t.Fatalf("raid = %+v, %v; want 2 members and no rebuild while the replica waits", r, err)
	}

	back.WaitRebuild = false
	capped := TargetSpec{Members: []MemberSpec{m0, m1, back}, RebuildMaxMiBPerSec: 1}
	wantStates(t, c.ensureSpec(capped), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
	c.clock.Advance(32 * time.Second)
	st := c.ensure(m0, m1, back)
	if got := st.Members[2]; got.State != agentv1.MemberState_MEMBER_STATE_REBUILDING || got.RebuildPercent != 50 {
		t.Fatalf("after 32 s at 1 MiB/s: %+v, want rebuilding at 50%%", got)
	}
	c.clock.Advance(32 * time.Second)
	wantStates(t, c.ensure(m0, m1, back), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
}

// Moving the target: OSD 1 becomes the target with its own replica as the
// one in-sync source. Its replica's export, through which the old target
// wrote, is deleted; the other replica is exported to the new target only,
// so the old target, back from the dead, reaches neither.
func TestMoveTargetFencesTheOldOne(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)

	c.targets[0].Kill()
	newTarget := agentv1.HostNQN(c.osds[1].cfg.UID)
	e2, err := c.osds[2].ExportReplica(ctx, volume, newTarget, 2, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.osds[1].EnsureTarget(ctx, TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{publishedHost}, Members: []MemberSpec{
		{OSD: c.osds[1].cfg.UID, InSync: true},
		{OSD: c.osds[2].cfg.UID, Export: e2},
		{OSD: c.osds[0].cfg.UID, Export: c.osds[0].Endpoint()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING, agentv1.MemberState_MEMBER_STATE_MISSING)
	if subs, err := c.spdks[1].NvmfGetSubsystems(ctx, ""); err != nil || slices.ContainsFunc(subs, func(s types.NvmfSubsystem) bool {
		return strings.HasPrefix(s.NQN, agentv1.ReplicaNQNPrefix(volume))
	}) {
		t.Errorf("the new target's replica is still exported to the old target (%v)", err)
	}

	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(0)
	old := c.ensure(m0, m1, m2)
	wantStates(t, old, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_MISSING, agentv1.MemberState_MEMBER_STATE_MISSING)
}

// wantIdentity checks that spdk's target of the volume presents the volume's
// identity and numbers its controllers from epoch's range.
func wantIdentity(t *testing.T, spdk *client.Client, epoch uint32) {
	t.Helper()
	ctx := context.Background()
	id := agentv1.VolumeIdentity(volume)
	low, high := agentv1.CntlidRange(epoch)
	sub, err := spdk.NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil {
		t.Fatal(err)
	}
	s := sub[0]
	if s.SerialNumber != id.Serial || s.MinCntlid != low || s.MaxCntlid != high || len(s.Namespaces) != 1 || !sameIdentity(s.Namespaces[0], id) {
		t.Fatalf("volume subsystem = %+v, want serial %s, controller ids %d-%d, namespace %+v", s, id.Serial, low, high, id)
	}
	if r, err := spdk.BdevGetBdevs(ctx, raidName(volume)); err != nil || r[0].UUID != id.RaidUUID {
		t.Fatalf("raid = %+v, %v; want uuid %s", r, err, id.RaidUUID)
	}
}

// A volume is the same namespace on every target it ever has, and each
// target incarnation numbers its controllers from its own range: a
// subsystem left from epoch 1 is created again for epoch 2, and a planned
// move to another OSD (epoch 3) presents the same namespace.
func TestTargetKeepsTheVolumeIdentity(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	on := func(target, other int, epoch uint32) TargetSpec {
		t.Helper()
		exp, err := c.osds[other].ExportReplica(ctx, volume, agentv1.HostNQN(c.osds[target].cfg.UID), epoch, Keys{})
		if err != nil {
			t.Fatal(err)
		}
		spec := TargetSpec{Volume: volume, Epoch: epoch, Hosts: []string{publishedHost}, Members: []MemberSpec{
			{OSD: c.osds[target].cfg.UID, InSync: true}, {OSD: c.osds[other].cfg.UID, Export: exp, InSync: true},
		}}
		for range 2 { // a re-drive keeps the subsystem
			if _, err := c.osds[target].EnsureTarget(ctx, spec); err != nil {
				t.Fatal(err)
			}
			wantIdentity(t, c.spdks[target], epoch)
		}
		return spec
	}
	on(0, 1, 1)
	a, b := agentv1.CntlidRange(1)
	if c, d := agentv1.CntlidRange(2); c <= b && a <= d {
		t.Fatalf("epochs 1 and 2 share controller ids: %d-%d and %d-%d", a, b, c, d)
	}
	on(0, 1, 2)
	if _, err := c.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1"}, nil); err != nil {
		t.Fatal(err)
	}
	moved := on(1, 0, 3)

	// A subsystem presenting another namespace (made by hand, say) is never
	// taken over.
	nqn := agentv1.VolumeNQN(volume)
	spdk := c.spdks[1]
	sub, err := spdk.NvmfGetSubsystems(ctx, nqn)
	if err != nil {
		t.Fatal(err)
	}
	foreign := agentv1.VolumeIdentity("0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e")
	if err := spdk.NvmfDeleteSubsystem(ctx, nqn); err != nil {
		t.Fatal(err)
	}
	if err := spdk.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: foreign.Serial, MinCntlid: sub[0].MinCntlid, MaxCntlid: sub[0].MaxCntlid}); err != nil {
		t.Fatal(err)
	}
	if _, err := spdk.NvmfSubsystemAddNs(ctx, nqn, types.NvmfNamespaceRequest{BdevName: raidName(volume), NSID: 1, UUID: foreign.UUID, NGUID: foreign.NGUID, EUI64: foreign.EUI64}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.osds[1].EnsureTarget(ctx, moved); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "NGUID") {
		t.Fatalf("a target over a subsystem presenting another namespace: err = %v, want a conflict", err)
	}
}

// Stopping a target reports the replicas that were in sync at that moment,
// read from the raid, not from what the caller believes: a member that
// dropped out silently is not among them, nor is one being rebuilt.
func TestDeleteTargetReportsTheMembersInSync(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	// A running raid's members are what SPDK says: a caller that lost
	// track (it thinks none is in sync) does not stop the target.
	m0.InSync, m1.InSync, m2.InSync = false, false, false
	wantStates(t, c.ensure(m0, m1, m2), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	if d, err := c.osds[0].DegradedTargets(ctx); err != nil || len(d) != 0 {
		t.Fatalf("degraded targets with every member in sync = %v, %v; want none", d, err)
	}
	// Replica 2's member drops out of the raid without the caller knowing;
	// the next lease renewal reports the target degraded.
	if err := c.spdks[0].BdevRaidRemoveBaseBdev(ctx, remoteBdev(volume, "osd-2")); err != nil {
		t.Fatal(err)
	}
	if d, err := c.osds[0].DegradedTargets(ctx); err != nil || fmt.Sprint(d) != "["+volume+"]" {
		t.Fatalf("degraded targets after a member dropped out = %v, %v; want [%s]", d, err, volume)
	}
	st, err := c.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.RaidFound || fmt.Sprint(st.InSync) != "[osd-0 osd-1]" {
		t.Fatalf("stopped = %+v, want osd-0 and osd-1 in sync", st)
	}
	again, err := c.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil)
	if err != nil || again.RaidFound {
		t.Fatalf("a second stop = %+v, %v; want no raid to read", again, err)
	}
}

// Growing every replica grows what the target exports.
func TestTargetFollowsAResize(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	m0, m1 := c.exportReplica(0, true), c.exportReplica(1, true)
	if st := c.ensure(m0, m1); st.SizeBytes != 64<<20 {
		t.Fatalf("size = %d, want 64 MiB", st.SizeBytes)
	}
	if _, err := c.osds[0].ResizeReplica(ctx, volume, 128<<20); err != nil {
		t.Fatal(err)
	}
	if st := c.ensure(m0, m1); st.SizeBytes != 64<<20 {
		t.Fatalf("size with one replica grown = %d, want 64 MiB", st.SizeBytes)
	}
	if _, err := c.osds[1].ResizeReplica(ctx, volume, 128<<20); err != nil {
		t.Fatal(err)
	}
	if st := c.ensure(m0, m1); st.SizeBytes != 128<<20 {
		t.Fatalf("size with both grown = %d, want 128 MiB", st.SizeBytes)
	}
}

// A target asked to resume refuses to re-assemble a raid SPDK lost: the
// caller must choose one source.
func TestResumeRefusesALostRaid(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	m0, m1 := c.exportReplica(0, true), c.exportReplica(1, true)
	spec := TargetSpec{Volume: volume, Epoch: 1, Members: []MemberSpec{m0, m1}, Hosts: []string{publishedHost}, Resume: true}
	c.ensure(m0, m1)
	if _, err := c.osds[0].EnsureTarget(ctx, spec); err != nil {
		t.Fatalf("resume of a running target: %v", err)
	}
	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(0)
	if _, err := c.osds[0].EnsureTarget(ctx, spec); !errors.Is(err, ErrTargetLost) {
		t.Fatalf("resume after SPDK restarted: err = %v, want ErrTargetLost", err)
	}
	m1.InSync = false
	wantStates(t, c.ensure(m0, m1), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING)
}

// A volume of one replica is its lvol, exported as the volume: SPDK's
// raid1 needs two members.
func TestOneReplicaVolumeExportsItsLvol(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1)
	if _, err := c.osds[0].CreateReplica(ctx, volume, 64<<20); err != nil {
		t.Fatal(err)
	}
	st := c.ensure(c.exportReplica(0, true))
	wantStates(t, st, agentv1.MemberState_MEMBER_STATE_ONLINE)
	if st.SizeBytes != 64<<20 || st.Export.NQN != agentv1.VolumeNQN(volume) {
		t.Fatalf("target = %+v", st)
	}
	subs, err := c.spdks[0].NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil || len(subs[0].Namespaces) != 1 || fmt.Sprint(subs[0].HostNQNs()) != fmt.Sprint([]string{publishedHost}) {
		t.Fatalf("volume subsystem = %+v, %v", subs, err)
	}
	if _, err := c.osds[0].DeleteTarget(ctx, volume, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.osds[0].DeleteReplica(ctx, volume); err != nil {
		t.Fatal(err)
	}
}

// While SPDK runs without the OSD's lvstore (restarted, not bootstrapped
// again yet), a replica is neither found nor missing: the caller must not
// take it for gone from its device, nor for deleted.
func TestBeforeBootstrapNoReplicaIsMissing(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1)
	if _, err := c.osds[0].CreateReplica(ctx, volume, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.osds[0].ResizeReplica(ctx, volume, 64<<20); !errors.Is(err, ErrNotBootstrapped) {
		t.Fatalf("resize before bootstrap: %v, want ErrNotBootstrapped", err)
	}
	if err := c.osds[0].DeleteReplica(ctx, volume); !errors.Is(err, ErrNotBootstrapped) {
		t.Fatalf("delete before bootstrap: %v, want ErrNotBootstrapped", err)
	}
	c.bootstrap(0)
	if _, err := c.osds[0].ResizeReplica(ctx, volume, 64<<20); err != nil {
		t.Fatalf("resize after bootstrap: %v", err)
	}
}

// The bdev a volume's hosts reach keeps SPDK's latency histogram on, for
// the metrics: from its first export, after SPDK restarted, and after
// anything turned it off.
func TestVolumeTargetsKeepALatencyHistogram(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	m0, m1 := c.exportReplica(0, true), c.exportReplica(1, true)
	histogramOn := func(when string) {
		t.Helper()
		bdevs, err := c.osds[0].VolumeBdevs(ctx)
		if err != nil || len(bdevs) != 1 || bdevs[volume] != raidName(volume) {
			t.Fatalf("%s: volume bdevs = %v, %v; want the raid", when, bdevs, err)
		}
		h, err := c.spdks[0].BdevGetHistogram(ctx, raidName(volume))
		if err != nil || h.Granularity != histogramGranularity {
			t.Fatalf("%s: histogram of the raid = %+v, %v; want one of granularity %d", when, h, err, histogramGranularity)
		}
	}
	c.ensure(m0, m1)
	histogramOn("first export")

	if err := c.spdks[0].BdevEnableHistogram(ctx, types.BdevEnableHistogramRequest{Name: raidName(volume)}); err != nil {
		t.Fatal(err)
	}
	c.ensure(m0, m1)
	histogramOn("turned off, re-driven")

	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(0)
	c.ensure(m0, m1)
	histogramOn("SPDK restarted, re-driven")
	if bdevs, err := c.osds[1].VolumeBdevs(ctx); err != nil || len(bdevs) != 0 {
		t.Fatalf("the OSD of a replica only: volume bdevs = %v, %v; want none", bdevs, err)
	}
}

// The target's own replica takes the raid's first slot, whatever the
// order the caller lists members in: SPDK's raid1 reads from the first
// of the least busy members.
func TestTheLocalReplicaTakesTheFirstSlot(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m1, m2, m0)
	r, err := c.osds[0].raid(ctx, raidName(volume))
	if err != nil {
		t.Fatal(err)
	}
	local, err := c.osds[0].replicaBdev(ctx, volume)
	if err != nil {
		t.Fatal(err)
	}
	slots := r.Members()
	if len(slots) != 3 || slots[0] != local.Name {
		t.Fatalf("raid slots %v, want the local lvol %s first", slots, local.Name)
	}
}

// Only an error of the replica's own holds it as failing: the aborts and
// path errors of a lost connection are the connection's.
func TestOwnErrorsLeaveOutTheConnections(t *testing.T) {
	cases := []struct {
		name string
		stat *types.NvmeErrorStat
		want int64
	}{
		{"none counted", nil, 0},
		{"aborted by a lost connection", &types.NvmeErrorStat{StatusType: map[string]uint32{"generic": 3}, StatusCode: map[string]uint32{"aborted_sq_deletion": 2, "aborted_by_request": 1}}, 0},
		{"path errors", &types.NvmeErrorStat{StatusType: map[string]uint32{"path": 4}, StatusCode: map[string]uint32{"internal_path_error": 4}}, 0},
		{"a full lvstore or a failing device", &types.NvmeErrorStat{StatusType: map[string]uint32{"generic": 3}, StatusCode: map[string]uint32{"aborted_sq_deletion": 2, "internal_device_error": 1}}, 1},
		{"a media error", &types.NvmeErrorStat{StatusType: map[string]uint32{"media_error": 2}, StatusCode: map[string]uint32{"unrecovered_read_error": 2}}, 2},
	}
	for _, tc := range cases {
		if got := ownErrors(tc.stat); got != tc.want {
			t.Errorf("%s: ownErrors = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A volume's limits reach its exported bdev, change and clear with the
// spec, and come back when the target is driven again after its SPDK
// restarted, which forgets them.
func TestTargetKeepsItsQoS(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	limitsOf := func() types.QosLimits {
		t.Helper()
		b, err := c.spdks[0].BdevGetBdevs(ctx, raidName(volume))
		if err != nil {
			t.Fatal(err)
		}
		return b[0].AssignedRateLimits
	}
	members := []MemberSpec{m0, m1, m2}
	limited := types.QosLimits{RwIOsPerSec: 1500, WMbytesPerSec: 40}
	for _, want := range []types.QosLimits{limited, {RwIOsPerSec: 3000}, {}, limited} {
		st := c.ensureSpec(TargetSpec{Members: members, QoS: want})
		if st.QoS != want.Applied() || limitsOf() != want.Applied() {
			t.Fatalf("QoS %+v: target reports %+v, SPDK holds %+v; want %+v", want, st.QoS, limitsOf(), want.Applied())
		}
	}

	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(0)
	if st := c.ensureSpec(TargetSpec{Members: members, QoS: limited}); st.QoS != limited.Applied() || limitsOf() != limited.Applied() {
		t.Fatalf("after SPDK restarted: target reports %+v, SPDK holds %+v; want %+v", st.QoS, limitsOf(), limited.Applied())
	}
}

// A volume of one replica is limited at its lvol, which it exports; the
// limits change, round as SPDK's do, and clear.
func TestOneReplicaVolumeKeepsItsQoS(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1)
	if _, err := c.osds[0].CreateReplica(ctx, volume, 64<<20); err != nil {
		t.Fatal(err)
	}
	member := c.exportReplica(0, true)
	for _, want := range []types.QosLimits{{RwIOsPerSec: 1000, RMbytesPerSec: 10}, {RwIOsPerSec: 2500}, {}} {
		st := c.ensureSpec(TargetSpec{Members: []MemberSpec{member}, QoS: want})
		r, err := c.osds[0].replicaBdev(ctx, volume)
		if err != nil {
			t.Fatal(err)
		}
		if st.QoS != want.Applied() || r.AssignedRateLimits != want.Applied() {
			t.Fatalf("QoS %+v: target reports %+v, the lvol holds %+v; want %+v", want, st.QoS, r.AssignedRateLimits, want.Applied())
		}
	}
}
