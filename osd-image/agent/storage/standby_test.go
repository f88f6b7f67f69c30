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

	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// A planned move from OSD 0 to OSD 1 prepares the volume's subsystem on
// OSD 1 first: the epoch's controller ids, the hosts, no namespace, so a
// host connects and is served nothing. The move's EnsureTarget of that
// epoch then adds the namespace to the same subsystem, and the host's
// controller, made before the move, stays.
func TestAStandbyLetsHostsConnectAndServesNothingUntilTheMove(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 3)
	c.createReplicas(64 << 20)
	c.ensure(c.exportReplica(0, true), c.exportReplica(1, true))
	nqn := agentv1.VolumeNQN(volume)

	if _, err := c.osds[0].PrepareTarget(ctx, StandbySpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a standby where the volume is served = %v, want ErrConflict", err)
	}
	sb, err := c.osds[1].PrepareTarget(ctx, StandbySpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Export.NQN != nqn || sb.Export.Port != 4422 || len(sb.Connected) != 0 {
		t.Fatalf("standby = %+v, want the volume's subsystem at OSD 1's listener, no host yet", sb)
	}
	subs, err := c.spdks[1].NvmfGetSubsystems(ctx, nqn)
	if err != nil {
		t.Fatal(err)
	}
	low, high := agentv1.CntlidRange(2)
	if s := subs[0]; len(s.Namespaces) != 0 || s.MinCntlid != low || s.MaxCntlid != high || len(s.Hosts) != 1 || s.Hosts[0].NQN != publishedHost {
		t.Fatalf("standby subsystem = %+v, want no namespace, controller ids %d-%d, host %s", s, low, high, publishedHost)
	}
	inv, err := c.osds[1].Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(inv.Targets, TargetSummary{Volume: volume, State: agentv1.TargetStateStandby, RebuildPercent: -1}) {
		t.Fatalf("OSD 1's inventory lists targets %+v, want the standby (for the orphan collection)", inv.Targets)
	}

	// The host connects (OSD 2's SPDK plays it) and sees no namespace.
	host := c.spdks[2]
	names, err := host.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{
		Name: "standby", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: "4422", Subnqn: nqn, Hostnqn: publishedHost})
	if err != nil || len(names) != 0 {
		t.Fatalf("a host's connect to the standby = %v, %v; want connected, with no namespace", names, err)
	}
	if sb, err = c.osds[1].PrepareTarget(ctx, StandbySpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost}}); err != nil || !slices.Equal(sb.Connected, []string{publishedHost}) {
		t.Fatalf("the standby prepared again reports %+v, %v; want the host connected", sb, err)
	}
	before, err := c.spdks[1].NvmfSubsystemGetControllers(ctx, nqn)
	if err != nil || len(before) != 1 {
		t.Fatalf("the standby's controllers = %+v, %v", before, err)
	}

	// The move: the target stops on OSD 0, and OSD 1 serves at epoch 2.
	if _, err := c.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1"}, nil); err != nil {
		t.Fatal(err)
	}
	exp, err := c.osds[0].ExportReplica(ctx, volume, agentv1.HostNQN("osd-1"), 2, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	spec := TargetSpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost}, Members: []MemberSpec{
		{OSD: "osd-1", InSync: true}, {OSD: "osd-0", Export: exp, InSync: true},
	}}
	if _, err := c.osds[1].EnsureTarget(ctx, spec); err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, c.spdks[1], 2)
	after, err := c.spdks[1].NvmfSubsystemGetControllers(ctx, nqn)
	if err != nil || len(after) != 1 || after[0].Cntlid != before[0].Cntlid {
		t.Fatalf("after the move the subsystem's controllers are %+v (%v), want the host's of before the move, %+v", after, err, before)
	}
	if _, out := c.fabric.Write("127.0.0.1", 4422, nqn, publishedHost); out != spdktest.WriteAcked {
		t.Fatalf("a host's write through the moved target = %v", out)
	}
}

// The fence covers a standby like any target: it lets hosts connect.
func TestTheFenceCoversAStandby(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	if _, err := c.osds[1].PrepareTarget(ctx, StandbySpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost}}); err != nil {
		t.Fatal(err)
	}
	fenced, err := c.osds[1].FenceTargets(ctx, func(string) bool { return false })
	if err != nil || !slices.Equal(fenced, []string{volume}) {
		t.Fatalf("FenceTargets = %v, %v; want the standby's volume", fenced, err)
	}
	served, err := VolumesServed(ctx, c.spdks[1])
	if err != nil || len(served) != 0 {
		t.Fatalf("after the fence the standby lets hosts reach %v (%v)", served, err)
	}
}

// A namespace added to a standby goes to the hosts the move admits only:
// one unpublished while the standby waited never reaches it, even if the
// call fails before it sets the hosts itself.
func TestAStandbyAdmitsOnlyThePublishedHostsToItsNamespace(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	const unpublished = "nqn.2014-08.org.nvmexpress:uuid:0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	if _, err := c.osds[1].PrepareTarget(ctx, StandbySpec{Volume: volume, Epoch: 2, Hosts: []string{publishedHost, unpublished}}); err != nil {
		t.Fatal(err)
	}
	b, err := c.osds[1].replicaBdev(ctx, volume)
	if err != nil {
		t.Fatal(err)
	}
	spec := TargetSpec{Volume: volume, Epoch: 2}
	if err := c.osds[1].ensureSubsystem(ctx, volumeSubsystem(spec, b.Name).admitting([]string{publishedHost}, keyNames{})); err != nil {
		t.Fatal(err)
	}
	subs, err := c.spdks[1].NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil {
		t.Fatal(err)
	}
	if s := subs[0]; len(s.Namespaces) != 1 || len(s.Hosts) != 1 || s.Hosts[0].NQN != publishedHost {
		t.Fatalf("subsystem = %+v, want the namespace added with %s alone allowed", s, publishedHost)
	}
}
